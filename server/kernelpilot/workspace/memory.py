"""Iteration memory: `memory/v<N>.json` records validated against the shipped `memory.schema.json`.

Owns create / read / update / mask / unmask / summary / restart. Reads and summaries skip masked
versions. Every write is atomic and (by default) committed, so the workspace tree stays clean and a
partial restart can check out the kernel of any recorded version.
"""

from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path
from typing import Any

from kernelpilot.foundation import readers
from kernelpilot.foundation.atomic import create_json_exclusive, write_json_atomic
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, KernelpilotError, StateError
from kernelpilot.workspace import gitops, ratios
from kernelpilot.workspace.core import Workspace, locate, now_iso
from kernelpilot.workspace.errors import DirtyTreeError, MemorySchemaError, MemoryVersionError
from kernelpilot.workspace.models import (
    MemoryCreateRequest,
    MemoryMaskRequest,
    MemoryReadRequest,
    MemoryRecordResult,
    MemoryRestartRequest,
    MemoryRestartResult,
    MemoryRevertRequest,
    MemorySummaryRequest,
    MemorySummaryResult,
    MemoryUnmaskRequest,
    MemoryUpdateRequest,
    SummaryEntry,
)
from kernelpilot.workspace.schema import SchemaViolation, memory_schema, validate

_FILE_RE = re.compile(r"^v(\d+)\.json$")
_UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
_FROZEN_KEYS = ("schema_version", "version", "created", "masked", "mask_reason")


def memory_path(ws: Workspace, version: int) -> Path:
    return ws.memory_dir / f"v{version}.json"


def rel(ws: Workspace, path: Path) -> str:
    return path.relative_to(ws.path).as_posix()


def validate_record(record: Any, file: str) -> dict[str, Any]:
    """Validate against the schema; MemorySchemaError names the file and the field path."""
    try:
        validate(record, memory_schema())
    except SchemaViolation as exc:
        raise MemorySchemaError(
            f"{file}: field '{exc.path or '<root>'}' {exc.reason}",
            "fix that field (see memory.schema.json shipped in kernelpilot/workspace/)",
            field_path=exc.path,
            file=file,
        ) from None
    assert isinstance(record, dict)
    return record


def load_record(ws: Workspace, version: int) -> dict[str, Any]:
    path = memory_path(ws, version)
    if not path.is_file():
        raise MemoryVersionError(
            f"memory version v{version} does not exist in {ws.name}",
            "list versions with `kernelpilot memory summary`",
        )
    return _load_file(ws, path, version)


def _load_file(ws: Workspace, path: Path, version: int) -> dict[str, Any]:
    name = rel(ws, path)
    try:  # the guarded reader: a folder, link loop or device, deep nesting, 1e999, lone surrogates
        data = readers.loads_json(readers.read_text(path, "memory file"), name)
    except KernelpilotError as exc:
        raise MemorySchemaError(exc.message, "restore it with git checkout", file=name) from exc
    record = validate_record(data, name)
    _whole_numbers(record, name)
    if record["version"] != version:
        raise MemorySchemaError(
            f"{name}: field 'version' is {record['version']} but the file name says v{version}",
            "rename the file or fix the field",
            field_path="version",
            file=name,
        )
    return record


def _whole_numbers(record: dict[str, Any], name: str) -> None:
    """The schema's integers written as 1e308 or 2.0 pass JSON Schema (a float with no fraction is an
    integer there) but not the models built from them: refuse them at the read, naming the field."""
    perf = record.get("performance")
    for path, value in (
        ("version", record.get("version")),
        ("parent", record.get("parent")),
        ("performance.samples", perf.get("samples") if isinstance(perf, dict) else None),
    ):
        if isinstance(value, float):
            raise MemorySchemaError(
                f"{name}: field '{path}' is {value!r}, not a whole number",
                "write it as an integer (e.g. 3)",
                field_path=path,
                file=name,
            )


def load_all(ws: Workspace) -> list[dict[str, Any]]:
    """Every record (masked included), sorted by version, each validated."""
    found: list[tuple[int, Path]] = []
    if ws.memory_dir.is_dir():
        for path in ws.memory_dir.iterdir():
            m = _FILE_RE.match(path.name)
            if m:
                found.append((int(m.group(1)), path))
    found.sort()
    return [_load_file(ws, path, v) for v, path in found]


def _to_us(median: float | None, unit: str) -> float | None:
    return None if median is None else median * _UNIT_TO_US[unit]


def _baseline(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    return ratios.baseline_of(records)


def _write(ws: Workspace, record: dict[str, Any], message: str, commit: bool) -> tuple[str, str | None]:
    path = memory_path(ws, int(record["version"]))
    validate_record(record, rel(ws, path))
    write_json_atomic(path, record, mkdir=True)
    head = gitops.commit_all(ws.path, message, [rel(ws, path)]) if commit else None
    return rel(ws, path), head


def _parse_pitfall(text: str) -> dict[str, str]:
    if "=>" not in text:
        raise InvalidArgumentError(
            f"--pitfall {text!r} must be written 'pitfall => fix'", "separate the problem and its fix with =>"
        )
    pitfall, fix = (s.strip() for s in text.split("=>", 1))
    return {"pitfall": pitfall, "fix": fix}


def is_kept(record: dict[str, Any]) -> bool:
    """A version whose kernel is (or was, until a later kept one) the current kernel: not masked, not
    reverted. Parents, best and latest versions are chosen among these."""
    return not record["masked"] and not record.get("reverted") and ratios.kind_of(record) != "exploration"


def _read_eval_file(req: MemoryCreateRequest, ws: Workspace) -> tuple[Path, dict[str, Any]]:
    assert req.eval_result is not None
    path = Path(req.eval_result).expanduser()
    if not path.is_absolute() and not path.exists():
        path = ws.path / path
    try:
        data = readers.read_json(path, "--eval-result")
    except KernelpilotError as exc:
        raise InputFileError(
            f"--eval-result {req.eval_result!r} is not readable JSON: {exc.message}", "re-run eval"
        ) from exc
    is_result = isinstance(data, dict) and data.get("schema_version") == 1 and "status" in data
    is_baseline = isinstance(data, dict) and data.get("schema_version") == 1 and "task_hash" in data
    if not (is_result or is_baseline):
        raise InputFileError(
            f"--eval-result {req.eval_result!r} is neither an eval result.json (schema_version 1 with "
            "status) nor a baseline.json",
            "pass the result.json or baseline.json written by `kernelpilot eval`",
        )
    return path, data


def _eval_timing(data: dict[str, Any]) -> tuple[float | None, list[float]]:
    """(median, samples) of the measured side: a result's candidate, a baseline.json's own runs."""
    samples = [float(x) for x in data.get("samples") or [] if isinstance(x, (int, float))]
    if "task_hash" in data:
        stats = data.get("stats") or {}
        median = stats.get("median") if isinstance(stats, dict) else None
    else:
        median = data.get("candidate_median")
    return (float(median) if isinstance(median, (int, float)) and median > 0 else None), samples


# eval statuses reached only after the task's correctness commands passed (tasks.evaluate._run_candidate runs
# them before timing; tasks.models.VERDICTS plus unstable); a baseline.json is written only after they pass
_CHECKED = ("improved", "regressed", "neutral", "unstable", "baseline")


def _checks_that_passed(path: Path, data: dict[str, Any], status: str) -> str | None:
    """The checks an eval result implies passed, as one line, or None: what the task ran before timing
    (task.json beside the result), or the guard harness's summary. None where nothing was checked, so an
    unchecked eval stays `passed: null` (issue 42: the documented eval showed `passed=-` after its check)."""
    if status not in _CHECKED:
        return None
    if data.get("guarded") and data.get("correctness"):
        return f"guard harness: {str(data['correctness'])[:300]}"
    try:
        task = readers.read_json(path.parent / "task.json", "task.json")
    except KernelpilotError:  # a result copied away from its task folder: the checks are not known
        return None
    cmds = task.get("correctness_commands") if isinstance(task, dict) else None
    if not isinstance(cmds, list) or not cmds:
        return None
    return "; ".join(shlex.join(str(a) for a in c) for c in cmds if isinstance(c, list))


def _plan_for(ws: Workspace, version: int) -> str | None:
    """The plan `kernelpilot plan` wrote for this version (plans/v<N>-<slug>.md, named by the version it
    would take), newest first; None when there is none."""
    found = sorted((ws.path / "plans").glob(f"v{version}-*.md"), key=lambda p: p.stat().st_mtime)
    return found[-1].relative_to(ws.path).as_posix() if found else None


def _from_eval(
    req: MemoryCreateRequest, ws: Workspace
) -> tuple[MemoryCreateRequest, dict[str, Any] | None, str | None]:
    """Fill unset performance/correctness fields from an eval `result.json` (`tasks.models.EvalRecord`) or
    a `baseline.json`; also return the eval's own verdict (its speed-up is vs the eval's baseline) and the
    machine it was measured on (`ratios.machine_of`)."""
    if req.eval_result is None:
        return req, None, None
    path, data = _read_eval_file(req, ws)
    updates: dict[str, Any] = {}
    metric = str(data.get("metric") or "")
    unit = next((u for u in ("ns", "us", "ms", "s") if metric.endswith(f"_{u}")), None)
    median, samples = _eval_timing(data)
    lower = data.get("direction", "lower") == "lower"
    if req.median is None and unit is not None and lower and median is not None:
        updates["median"] = median
        updates["unit"] = unit
        if req.samples is None and samples:
            updates["samples"] = len(samples)
        if req.spread_pct is None and len(samples) >= 2:
            # (max - min) / median of the measured side's per-run samples, as eval recorded them
            updates["spread_pct"] = round((max(samples) - min(samples)) / median * 100.0, 3)
    status = "baseline" if "task_hash" in data else str(data["status"])
    if req.correct is None and status == "correctness_failed":
        updates["correct"] = False
    elif req.correct is None:
        command = _checks_that_passed(path, data, status)
        if command is not None:
            updates["correct"] = True
            if req.check_command is None:
                updates["check_command"] = command
    if req.perf_source is None:
        try:
            updates["perf_source"] = path.resolve().relative_to(ws.path).as_posix()
        except ValueError:
            updates["perf_source"] = str(path)
    speedup = data.get("speedup")
    verdict = {
        "status": status,
        "speedup": float(speedup) if isinstance(speedup, (int, float)) else None,
        "speedup_ci": data.get("speedup_ci"),
        "baseline_median": data.get("baseline_median"),
        "baseline_commit": data.get("commit")
        if status == "baseline"
        else ratios.baseline_commit_of(path, data),
        "metric": metric or None,
        "method": data.get("method") if isinstance(data.get("method"), str) else None,
    }
    return req.model_copy(update=updates), verdict, ratios.machine_of(data.get("environment"))


def _kind(req: MemoryCreateRequest, verdict: dict[str, Any] | None, records: list[dict[str, Any]]) -> str:
    """The kind the user named (--kind), else baseline for the workspace's first baseline (a baseline.json
    eval result, or a change that starts with 'baseline'), else iteration."""
    if req.kind is not None:
        return req.kind
    has_base = any(ratios.kind_of(r) == "baseline" and not r["masked"] for r in records)
    named = (
        verdict is not None and verdict["status"] == "baseline"
    ) or req.change.strip().lower().startswith("baseline")
    return "baseline" if named and not has_base else "iteration"


def _next_version(kind: str, by_version: dict[int, dict[str, Any]]) -> int:
    """v0 is kept for the baseline: the baseline takes it when free; any other first record takes v1."""
    if kind == "baseline" and 0 not in by_version:
        return 0
    return max(by_version) + 1 if by_version else 1


def _derived_ratios(
    req: MemoryCreateRequest,
    ws: Workspace,
    kind: str,
    parent: dict[str, Any] | None,
    base: dict[str, Any] | None,
    verdict: dict[str, Any] | None,
    machine: str | None,
) -> dict[str, Any]:
    """vs_parent and vs_baseline with their bases (`workspace.ratios`); a --vs-baseline given wins."""
    med = None if req.median is None else req.median * _UNIT_TO_US[req.unit]
    to_parent = ratios.vs_parent(ws, parent, verdict, med, machine)
    if req.vs_baseline is not None:
        to_base = ratios.Ratio(req.vs_baseline, "given (--vs-baseline)")
    elif kind == "baseline" or base is None:
        to_base = ratios.Ratio(1.0 if med is not None else None, "this version is the baseline")
    else:
        to_base = ratios.vs_baseline(base, parent, to_parent, med, machine)
    return {
        "vs_baseline": to_base.value,
        "vs_parent": to_parent.value,
        "vs_parent_basis": to_parent.basis,
        "vs_baseline_basis": to_base.basis,
        "machine": machine,
    }


def memory_create(req: MemoryCreateRequest) -> MemoryRecordResult:
    ws = locate(req.workspace, req.root)
    req, eval_verdict, machine = _from_eval(req, ws)
    records = load_all(ws)
    by_version = {int(r["version"]): r for r in records}
    kind = _kind(req, eval_verdict, records)
    version = req.version if req.version is not None else _next_version(kind, by_version)
    if version in by_version:
        raise StateError(
            f"memory version v{version} already exists in {ws.name}",
            "omit --version to take the next free one, or use `kernelpilot memory update`",
        )
    parent = req.parent
    if parent is None and kind != "baseline":
        earlier = [v for v, r in by_version.items() if v < version and is_kept(r)]
        parent = max(earlier) if earlier else None
    elif parent is not None and parent not in by_version:
        raise MemoryVersionError(
            f"--parent v{parent} does not exist in {ws.name}", "give an existing version"
        )
    derived = _derived_ratios(
        req,
        ws,
        kind,
        by_version.get(parent) if parent is not None else None,
        _baseline(records),
        eval_verdict,
        machine,
    )
    profile: dict[str, Any] = copy.deepcopy(req.profile) if req.profile else {}
    profile.pop("kernel", None)  # a BottleneckVerdict names the kernel; the workspace already does
    profile.pop("next_measurements", None)
    if req.verdict is not None:
        profile["verdict"] = req.verdict
    profile.setdefault("verdict", None)
    record: dict[str, Any] = {
        "schema_version": 1,
        "version": version,
        "parent": parent,
        "created": now_iso(),
        "updated": None,
        "plan": req.plan if req.plan is not None else _plan_for(ws, version),
        "change": req.change,
        "kind": kind,
        "kernel_file": ws.kernel_file,
        "correctness": {
            "passed": req.correct,
            "max_rel_err": req.max_rel_err,
            "tolerance": req.tolerance,
            "command": req.check_command,
        },
        "performance": {
            "median": req.median,
            "spread_pct": req.spread_pct,
            "unit": req.unit,
            "samples": req.samples,
            **derived,
            "expected_speedup": req.expected_speedup,
            "source": req.perf_source,
            "eval": eval_verdict,
        },
        "profile": profile,
        "pitfalls_and_fixes": [_parse_pitfall(p) for p in req.pitfall],
        "notes": req.notes,
        "masked": False,
        "mask_reason": None,
        "commit": None,
    }
    name = rel(ws, memory_path(ws, version))
    validate_record(record, name)  # fail before touching git
    if req.commit:
        # never the task's worktrees (eval's .baseline-tree) or any other nested repository: a gitlink
        nested = [f":(exclude){p}" for p in gitops.nested_repos(ws.path)]
        gitops.git(ws.path, "add", "-A", "--", ".", ":(exclude)memory", *nested)
        gitops.git(ws.path, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"v{version}: {req.change}")
        record["commit"] = gitops.head(ws.path)
    target = memory_path(ws, version)
    if not create_json_exclusive(target, record, mkdir=True):
        raise StateError(
            f"memory version v{version} was created by another writer meanwhile",
            "re-run `kernelpilot memory create` (it takes the next free version)",
        )
    path = rel(ws, target)
    head = gitops.commit_all(ws.path, f"memory v{version}: {req.change}", [path]) if req.commit else None
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=record, commit=head)


def memory_read(req: MemoryReadRequest) -> MemoryRecordResult:
    ws = locate(req.workspace, req.root)
    if req.version is None:
        records = [r for r in load_all(ws) if is_kept(r)]
        if not records:
            raise MemoryVersionError(
                f"workspace {ws.name} has no kept (unmasked, not reverted) memory versions",
                "record one with `kernelpilot memory create`, or read one with --version",
            )
        record = records[-1]
    else:
        record = load_record(ws, req.version)
        if record["masked"] and not req.include_masked:
            raise MemoryVersionError(
                f"memory version v{req.version} is masked (skipped by reads)",
                "pass --include-masked to read it anyway, or `kernelpilot memory unmask`",
            )
    path = rel(ws, memory_path(ws, int(record["version"])))
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=record, commit=None)


def _deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def memory_update(req: MemoryUpdateRequest) -> MemoryRecordResult:
    ws = locate(req.workspace, req.root)
    record = load_record(ws, req.version)
    frozen = [k for k in _FROZEN_KEYS if k in req.patch]
    if frozen:
        raise InvalidArgumentError(
            f"--patch may not change {', '.join(frozen)}", "use `kernelpilot memory mask/unmask` for masking"
        )
    updated = _deep_merge(record, req.patch)
    updated["updated"] = now_iso()
    path, head = _write(
        ws, updated, f"memory v{req.version}: update {', '.join(sorted(req.patch))}", req.commit
    )
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=updated, commit=head)


def _set_mask(
    ws: Workspace, version: int, masked: bool, reason: str | None, commit: bool
) -> MemoryRecordResult:
    record = load_record(ws, version)
    record["masked"] = masked
    record["mask_reason"] = reason if masked else None
    record["updated"] = now_iso()
    verb = "mask" if masked else "unmask"
    path, head = _write(ws, record, f"memory: {verb} v{version}" + (f" ({reason})" if reason else ""), commit)
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=record, commit=head)


def memory_mask(req: MemoryMaskRequest) -> MemoryRecordResult:
    return _set_mask(locate(req.workspace, req.root), req.version, True, req.reason, req.commit)


def memory_unmask(req: MemoryUnmaskRequest) -> MemoryRecordResult:
    return _set_mask(locate(req.workspace, req.root), req.version, False, None, req.commit)


def summarize(ws: Workspace, records: list[dict[str, Any]], include_masked: bool) -> MemorySummaryResult:
    entries: list[SummaryEntry] = []
    masked: list[int] = []
    best: tuple[float, int] | None = None
    for r in records:
        if r["masked"]:
            masked.append(int(r["version"]))
            if not include_masked:
                continue
        perf, corr = r["performance"], r["correctness"]
        entries.append(
            SummaryEntry(
                version=r["version"],
                parent=r["parent"],
                change=r["change"],
                status=status_of(r),
                passed=corr["passed"],
                max_rel_err=corr["max_rel_err"],
                median=perf["median"],
                unit=perf["unit"],
                spread_pct=perf["spread_pct"],
                vs_baseline=perf["vs_baseline"],
                vs_parent=perf.get("vs_parent"),
                expected_speedup=perf.get("expected_speedup"),
                verdict=r["profile"].get("verdict"),
                masked=r["masked"],
                commit=r["commit"],
            )
        )
        med_us = _to_us(perf["median"], perf["unit"])
        if (
            is_kept(r)
            and med_us is not None
            and corr["passed"] is not False
            and (best is None or med_us < best[0])
        ):
            best = (med_us, int(r["version"]))
    kept = [int(r["version"]) for r in records if is_kept(r)]
    return MemorySummaryResult(
        workspace=str(ws.path),
        entries=entries,
        masked_versions=masked,
        reverted_versions=[int(r["version"]) for r in records if not r["masked"] and r.get("reverted")],
        baseline_version=int(base["version"]) if (base := _baseline(records)) is not None else None,
        best_version=best[1] if best else None,
        latest_version=kept[-1] if kept else None,
    )


def status_of(record: dict[str, Any]) -> str:
    """`kept`, `reverted:<eval status>` or `masked`: how summaries and reports label a version."""
    if record["masked"]:
        return "masked"
    reverted = record.get("reverted")
    return f"reverted:{reverted['status']}" if reverted else "kept"


def memory_summary(req: MemorySummaryRequest) -> MemorySummaryResult:
    ws = locate(req.workspace, req.root)
    return summarize(ws, load_all(ws), req.include_masked)


def _dirty(ws: Workspace) -> list[str]:
    """Uncommitted changes a kernel restore would clobber: a task's own bookkeeping under `.kernelpilot/`
    (result.json, ledger.jsonl, baseline.json that eval rewrites) is not one of them."""
    return [d for d in gitops.dirty_entries(ws.path) if not d[3:].strip('"').startswith(".kernelpilot/")]


def memory_restart(req: MemoryRestartRequest) -> MemoryRestartResult:
    ws = locate(req.workspace, req.root)
    records = load_all(ws)
    doomed = [r for r in records if r["version"] >= req.from_version]
    if not doomed:
        raise MemoryVersionError(
            f"no memory version >= v{req.from_version} in {ws.name}",
            "list versions with `kernelpilot memory summary`",
        )
    dirty = _dirty(ws)
    if dirty:
        shown = "; ".join(d.strip() for d in dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise DirtyTreeError(
            f"workspace {ws.name} has uncommitted changes ({shown}); a restart would overwrite them",
            "commit them (or record them with `kernelpilot memory create`), or discard them "
            "with git, then retry",
        )
    survivors = [r for r in records if r["version"] < req.from_version and is_kept(r)]
    kernel = ws.kernel_file
    if survivors:
        src = survivors[-1]
        if not src["commit"]:
            raise StateError(
                f"v{src['version']} has no recorded commit, so its kernel cannot be restored",
                "restart from a version recorded with commit on, or restore the kernel by hand",
            )
        restored_version: int | None = int(src["version"])
        commit = str(src["commit"])
        kernel = str(src.get("kernel_file") or kernel)
    else:
        restored_version = None
        roots = gitops.git(ws.path, "rev-list", "--max-parents=0", "HEAD").stdout.split()
        commit = roots[-1]
    if not gitops.commit_exists(ws.path, commit, kernel):
        raise StateError(
            f"commit {commit[:12]} does not hold {kernel}",
            "check `git log` in the workspace; the history was rewritten",
        )
    masked: list[int] = []
    try:
        gitops.restore_file(ws.path, commit, kernel)
        for r in doomed:
            if not r["masked"]:
                r["masked"] = True
                r["mask_reason"] = req.reason or f"partial restart from v{req.from_version}"
                r["updated"] = now_iso()
                path = memory_path(ws, int(r["version"]))
                validate_record(r, rel(ws, path))
                write_json_atomic(path, r, mkdir=True)
                masked.append(int(r["version"]))
        src_name = f"v{restored_version}" if restored_version is not None else "initial kernel"
        head = gitops.commit_all(
            ws.path,
            f"restart from v{req.from_version}: mask {', '.join(f'v{v}' for v in masked) or 'nothing'}, "
            f"restore {kernel} from {src_name}",
            allow_empty=True,
        )
    except BaseException:
        gitops.reset_hard(ws.path)
        raise
    return MemoryRestartResult(
        workspace=str(ws.path),
        masked=masked,
        restored_version=restored_version,
        restored_commit=commit,
        kernel_file=kernel,
        commit=head,
    )


def _revert_target(ws: Workspace, records: list[dict[str, Any]], version: int | None) -> dict[str, Any]:
    """The record to revert: the given version, else the latest kept one; never the baseline."""
    kept = [r for r in records if is_kept(r)]
    if version is None:
        if len(kept) < 2:
            raise MemoryVersionError(
                f"workspace {ws.name} has no kept iteration after the baseline to revert",
                "record the iteration first (`kernelpilot memory create --eval-result ...`)",
            )
        return kept[-1]
    record = next((r for r in records if int(r["version"]) == version), None)
    if record is None:
        raise MemoryVersionError(
            f"memory version v{version} does not exist in {ws.name}", "list versions with `memory summary`"
        )
    if not is_kept(record):
        raise StateError(
            f"v{version} is already {status_of(record)}",
            "pick a kept version from `kernelpilot memory summary`",
        )
    if kept and int(kept[0]["version"]) == version:
        raise StateError(
            f"v{version} is the baseline of {ws.name}; there is nothing to revert to",
            "revert an iteration after the baseline, or start a new workspace",
        )
    return record


def memory_revert(req: MemoryRevertRequest) -> MemoryRecordResult:
    """Undo one iteration's change but keep its record visible: restore the kernel of the version it started
    from, mark the record `reverted` with the eval status and why, commit (`memory restart` masks instead)."""
    ws = locate(req.workspace, req.root)
    records = load_all(ws)
    record = _revert_target(ws, records, req.version)
    ev = record["performance"].get("eval") or {}
    status = req.status or ev.get("status")
    if not status:
        raise InvalidArgumentError(
            f"v{record['version']} has no eval status on record", "pass --status (e.g. neutral, regressed)"
        )
    dirty = _dirty(ws)
    if dirty:
        raise DirtyTreeError(
            f"workspace {ws.name} has uncommitted changes ({'; '.join(d.strip() for d in dirty[:5])}); "
            "a revert would overwrite them",
            "commit them (or record them with `kernelpilot memory create`), or discard them with git, "
            "then retry",
        )
    by_version = {int(r["version"]): r for r in records}
    parent = by_version.get(record["parent"]) if record["parent"] is not None else None
    kernel = str(record.get("kernel_file") or ws.kernel_file)
    if parent is not None and parent["commit"]:
        commit = str(parent["commit"])
    else:
        commit = gitops.git(ws.path, "rev-list", "--max-parents=0", "HEAD").stdout.split()[-1]
    if not gitops.commit_exists(ws.path, commit, kernel):
        raise StateError(f"commit {commit[:12]} does not hold {kernel}", "check `git log` in the workspace")
    record["reverted"] = {
        "status": status,
        "reason": req.reason,
        "restored_version": int(parent["version"]) if parent is not None else None,
        "restored_commit": commit,
        "at": now_iso(),
    }
    record["updated"] = now_iso()
    path = memory_path(ws, int(record["version"]))
    validate_record(record, rel(ws, path))
    try:
        gitops.restore_file(ws.path, commit, kernel)
        write_json_atomic(path, record, mkdir=True)
        src = f"v{parent['version']}" if parent is not None else "the initial kernel"
        head = gitops.commit_all(
            ws.path,
            f"revert v{record['version']} ({status}): {req.reason}; {kernel} from {src}",
            allow_empty=True,
        )
    except BaseException:
        gitops.reset_hard(ws.path)
        raise
    return MemoryRecordResult(workspace=str(ws.path), path=rel(ws, path), record=record, commit=head)
