"""Turn an eval `result.json`, a `ledger.jsonl` line or a task's `baseline.json` into a record.

The format is `kernelpilot.tasks.models.EvalRecord`, written by `kernelpilot.tasks`.

Status map (eval -> record): improved -> success, regressed -> regression, neutral -> neutral,
failed -> crash (is_buggy), correctness_failed -> incorrect (is_buggy), unstable -> neutral (tag
`unstable`: the timing could not separate the two), out_of_scope -> abandoned (tag `out_of_scope`),
needs_baseline -> neutral with no score (tag `needs_baseline`), rejected_* (the guard) -> incorrect
(is_buggy, tag `rejected`, the error message is the rejection's evidence). Score = the speed-up. A
baseline.json (no status) -> success, score 1.0, tag `baseline`.
The record id is derived from the eval object's content (`ev-` + 16 hex of its SHA-256), so ingesting
the same line twice finds the existing record instead of duplicating it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from kernelpilot.experiments.record import SUMMARY_MAX_CHARS, ExperimentRecord, Status
from kernelpilot.foundation.errors import FormatError
from kernelpilot.foundation.models import compact_json
from kernelpilot.guard.models import REJECT_STATUSES
from kernelpilot.tasks.models import Status as EvalStatus  # the eval result contract is the tasks module's

STATUS_MAP: dict[str, tuple[Status, str | None]] = {
    "improved": (Status.success, None),
    "regressed": (Status.regression, None),
    "neutral": (Status.neutral, None),
    "unstable": (Status.neutral, "unstable"),
    "failed": (Status.crash, None),
    "correctness_failed": (Status.incorrect, None),
    "out_of_scope": (Status.abandoned, "out_of_scope"),
    "needs_baseline": (Status.neutral, "needs_baseline"),
    # every guard rejection (kernelpilot.guard.models.RejectStatus): incorrect, tagged `rejected`
    **{s: (Status.incorrect, "rejected") for s in REJECT_STATUSES},
}


class EvalResult(BaseModel):
    """`tasks.models.EvalRecord` (`result.json`; a ledger line adds `ledger_version`); extra keys pass."""

    model_config = ConfigDict(extra="allow")

    schema_version: int
    task: str
    status: EvalStatus
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    baseline_median: float | None = None
    candidate_median: float | None = None
    metric: str = ""
    direction: Literal["lower", "higher"] = "lower"
    samples: list[float] = []
    baseline_samples: list[float] = []
    commit: str | None = None
    diff_hash: str | None = None
    changed_files: list[str] = []
    output_tail: str = ""
    created: str
    environment: dict[str, Any] = {}
    rejection: dict[str, Any] | None = None


def parse_eval(obj: Any, where: str) -> EvalResult:
    try:
        ev = EvalResult.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "object"
        raise FormatError(
            f"{where}: not an eval result ({loc}: {err['msg']}; {len(exc.errors())} problem(s))",
            "give a result.json or ledger.jsonl line written by `kernelpilot eval`",
        ) from exc
    if ev.schema_version != 1:
        raise FormatError(
            f"{where}: eval schema_version {ev.schema_version} is not supported (1 is)", "upgrade"
        )
    return ev


def _created(ev: EvalResult, where: str) -> datetime:
    return _iso_time(ev.created, where)


def _iso_time(text: str, where: str) -> datetime:
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise FormatError(f"{where}: created {text!r} is not an ISO-8601 time", "fix the file") from exc
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


def is_baseline(obj: Any) -> bool:
    """A `baseline.json` (`tasks.models.Baseline`) rather than an eval result: it has no status."""
    return isinstance(obj, dict) and "task_hash" in obj and "stats" in obj and "status" not in obj


def _record_from_baseline(obj: dict[str, Any], where: str, **kw: Any) -> ExperimentRecord:
    """The baseline measurement as the first record of a line of work: status success, score 1.0, tag
    `baseline` (kernel-exp-history conventions)."""
    from kernelpilot.tasks.models import Baseline

    try:
        base = Baseline.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise FormatError(
            f"{where}: not a baseline.json ({'.'.join(str(p) for p in err['loc'])}: {err['msg']})",
            "give the baseline.json written by `kernelpilot eval --refresh-baseline`",
        ) from exc
    s = base.stats
    outcome = f"baseline median {s.median:.4g} {base.metric}"
    what = " ".join(str(kw["change"] or "baseline").split())[:WHAT_MAX_CHARS]
    data = {
        "id": eval_record_id(obj),
        "parent_id": kw["parent_id"],
        "created": _iso_time(base.created, where),
        "operator": kw["operator"] or base.task,
        "dtype": kw["dtype"],
        "gpu": kw["gpu"] if kw["gpu"] is not None else _gpu_from_env(base.environment),
        "arch": kw["arch"],
        "environment": _environment(base.environment),
        "base_commit": base.commit,
        "diff_hash": base.diff_hash,
        "summary": f"{what} - {outcome}"[:SUMMARY_MAX_CHARS],
        "description": {
            "approach": kw["change"] or "baseline",
            "result": f"{base.metric} median {s.median} ({base.direction} is better), {s.count} runs, "
            f"CV {s.cv:.4f} ({s.verdict})",
            "why": "",
        },
        "raw_result": json.loads(
            json.dumps(
                {
                    "eval_status": "baseline",
                    "metric": base.metric,
                    "direction": base.direction,
                    "candidate_median": s.median,
                    "samples": base.samples,
                    "stable": base.stable,
                }
            )
        ),
        "score": 1.0,
        "status": Status.success,
        "is_buggy": False,
        "error_message": None,
        "tags": list(dict.fromkeys([*kw["tags"], "baseline", *([] if base.stable else ["unstable"])])),
        "links": {kw["link_field"]: kw["link"], "workspace": kw["workspace"], "files": []},
    }
    try:
        return ExperimentRecord.model_validate(data)
    except ValidationError as exc:
        from kernelpilot.experiments.store import record_error

        raise record_error(exc, f"ingest of {where}") from exc


def _environment(env: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"libraries": {}, "other": {}}
    for key, value in env.items():
        if value is None:
            continue
        text = value if isinstance(value, str) else compact_json(value)
        low = key.lower()
        if low in ("driver", "driver_version", "nvidia_driver"):
            out["driver"] = text
        elif low in ("toolkit", "cuda", "cuda_version", "rocm", "rocm_version", "hip_version"):
            out["toolkit"] = text
        elif low in ("torch", "triton", "cutlass", "cudnn", "cublas", "python", "numpy", "jax", "tilelang"):
            out["libraries"][key] = text
        else:
            out["other"][key] = text
    return out


def _gpu_from_env(env: dict[str, Any]) -> str:
    for key in ("gpu", "gpu_name", "device", "device_name"):
        value = env.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


_DOTTED_EXC = re.compile(r"^(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*(?:Error|Exception|Failure))\b")
WHAT_MAX_CHARS = 40


def _summary(what: str, ev: EvalResult, status: Status) -> str:
    """'<what> - <outcome>' in at most 80 characters: what keeps up to 40, the outcome gets the rest."""
    if ev.rejection is not None:
        outcome = f"{ev.status}: {ev.rejection.get('evidence', '')}"
    elif ev.status in ("failed", "correctness_failed"):
        last = next((ln.strip() for ln in reversed(ev.output_tail.splitlines()) if ln.strip()), "")
        last = _DOTTED_EXC.sub(r"\1", last)  # triton.compiler.errors.CompilationError -> CompilationError
        outcome = f"{ev.status}: {last}" if last else ev.status
    elif ev.speedup is not None:
        outcome = f"{ev.status} {ev.speedup:.3g}x"
    else:
        outcome = ev.status
    outcome = " ".join(outcome.split())
    what = " ".join(what.split()) or ev.task
    room = SUMMARY_MAX_CHARS - 3
    if len(what) + len(outcome) > room:
        if len(what) > WHAT_MAX_CHARS:
            what = what[: WHAT_MAX_CHARS - 1] + "~"
        if len(what) + len(outcome) > room:
            outcome = outcome[: room - len(what) - 1] + "~"
    return f"{what} - {outcome}"


def _rejected_why(ev: EvalResult) -> str:
    """What `exp failures` shows the next attempt: the guard's status and evidence (never a win)."""
    if ev.rejection is None:
        return ""
    return f"{ev.status} (never a win): {ev.rejection.get('evidence', '')}"[:600]


def eval_record_id(obj: Any) -> str:
    return "ev-" + hashlib.sha256(compact_json(obj).encode("utf-8")).hexdigest()[:16]


def record_from_eval(
    obj: Any,
    where: str,
    *,
    operator: str | None,
    dtype: str,
    gpu: str | None,
    arch: str,
    change: str | None,
    parent_id: str | None,
    tags: list[str],
    link_field: Literal["ledger", "result_json"],
    link: str,
    workspace: str | None,
) -> ExperimentRecord:
    """The record for one eval object, or for a baseline.json (validation errors name the field)."""
    if is_baseline(obj):
        return _record_from_baseline(
            obj, where, operator=operator, dtype=dtype, gpu=gpu, arch=arch, change=change,
            parent_id=parent_id, tags=tags, link_field=link_field, link=link, workspace=workspace,
        )  # fmt: skip
    ev = parse_eval(obj, where)
    status, extra_tag = STATUS_MAP[ev.status]
    score = ev.speedup if ev.speedup is not None and math.isfinite(ev.speedup) and ev.speedup > 0 else None
    if ev.status == "needs_baseline":
        score = None
    buggy = ev.status in ("failed", "correctness_failed") or ev.status in REJECT_STATUSES
    all_tags = list(dict.fromkeys([*tags, *([extra_tag] if extra_tag else [])]))
    raw = {
        "eval_status": ev.status,
        "metric": ev.metric,
        "direction": ev.direction,
        "speedup_ci": ev.speedup_ci,
        "rejection": ev.rejection,
        "baseline_median": ev.baseline_median,
        "candidate_median": ev.candidate_median,
        "samples": ev.samples,
        "baseline_samples": ev.baseline_samples,
        # paired timing (tasks.paired): how the verdict was measured and the clocks seen meanwhile
        **{
            k: obj[k]
            for k in ("method", "ratio_median", "ratio_ci", "pairs", "clocks")
            if obj.get(k) is not None
        },
    }
    error = ev.output_tail[-2000:].strip() or ev.status if buggy else None
    if ev.rejection is not None:  # the guard's reason, which `exp failures` shows the next attempt
        error = f"{ev.status} ({ev.rejection.get('check', '?')} check): {ev.rejection.get('evidence', '')}"[
            :2000
        ]
    result_text = (
        f"{ev.metric or 'metric'} median {ev.baseline_median} -> {ev.candidate_median} ({ev.direction} is "
        f"better), speed-up {ev.speedup} CI {ev.speedup_ci}"
        + (f", paired ({obj.get('pairs')} pairs)" if obj.get("method") == "paired" else "")
        if ev.baseline_median is not None or ev.candidate_median is not None
        else f"eval status {ev.status}"
    )
    data = {
        "id": eval_record_id(obj),
        "parent_id": parent_id,
        "created": _created(ev, where),
        "operator": operator or ev.task,
        "dtype": dtype,
        "gpu": gpu if gpu is not None else _gpu_from_env(ev.environment),
        "arch": arch,
        "environment": _environment(ev.environment),
        "base_commit": ev.commit,
        "diff_hash": ev.diff_hash,
        "summary": _summary(change or f"eval {ev.task}", ev, status),
        "description": {
            "approach": change or "",
            "result": result_text,
            "why": {
                "unstable": "timing spread too large to tell",
                "needs_baseline": "no baseline measured",
            }.get(ev.status, _rejected_why(ev)),
        },
        "raw_result": json.loads(json.dumps(raw)),
        "score": score,
        "status": status,
        "is_buggy": buggy,
        "error_message": error,
        "tags": all_tags,
        "links": {link_field: link, "workspace": workspace, "files": ev.changed_files},
    }
    try:
        return ExperimentRecord.model_validate(data)
    except ValidationError as exc:
        from kernelpilot.experiments.store import record_error

        raise record_error(exc, f"ingest of {where}") from exc
