"""`suggest_experiments`: a ranked queue of experiment hypotheses from a bottleneck verdict.

Score of a lever for a verdict = rule weight (rules.LEVERS) x (0.5 + 0.5 x verdict confidence)
x ISA factors (e.g. loads already 128-bit -> vectorizing is down-weighted; spills present -> the
spill lever appears) x history factors (each earlier regressed/neutral/failed attempt of the same
lever on the same kernel x0.35; an unstable one x0.8; an improved one x0.8). Every entry is a
hypothesis to test with `kernelpilot eval`, never a claim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelpilot.bottleneck.models import Cause
from kernelpilot.bottleneck.rules import MIN_GAIN_PCT, contradicted_levers
from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import FormatError
from kernelpilot.foundation.validation import load_json_argument, looks_inline_json, path_kind
from kernelpilot.guard.models import REJECT_STATUSES
from kernelpilot.roofline.models import StopVerdict
from kernelpilot.suggest.models import EvalContract, Suggestion, SuggestRequest, SuggestResult
from kernelpilot.suggest.playbook import Shape, kernel_shape, sections
from kernelpilot.suggest.rules import LEVERS, Lever

BY_ID = {lv.id: lv for lv in LEVERS}
LEVER_STEP = 0.15  # each later lever of one cause scores 15% less than the one before it
ROOF_NOTE = "at the roofline — stop or fuse"

VERDICTS = ("compute_bound", "memory_bound", "latency_bound", "sync_bound", "unknown")
FAILED_STATUSES = (
    "regressed",
    "neutral",
    "correctness_failed",
    "failed",
    "out_of_scope",
    *REJECT_STATUSES,  # a candidate the guard rejected (kernelpilot.guard.models)
)
FAIL_FACTOR = 0.35
UNSTABLE_FACTOR = 0.8
DONE_FACTOR = 0.8

PREDICTIONS = {
    "memory": "fewer bytes moved or higher achieved bandwidth; time should fall about in proportion to "
    "the bytes removed",
    "compute": "higher achieved FLOP/s; time should fall toward the compute roof",
    "latency": "more work in flight (occupancy or ILP); stall cycles per instruction should drop",
    "sync": "fewer barrier/atomic stalls; time should fall by about the measured stall share",
    "issue": "fewer warp instructions issued for the same work (smsp__inst_executed.sum; SHFL and total "
    "counts in `isa mix`); time should fall about in proportion while the issue floor binds",
    "resources": "no local-memory traffic (spills 0 in `isa resources`) and a shorter time",
    "measure": "no time change: this step only measures",
}


def _load(value: str, what: str) -> Any:
    """A JSON argument (inline or a file, `validation.load_json_argument`), or a `.jsonl` file / a task folder
    holding `ledger.jsonl` (history), read line by line."""
    if looks_inline_json(value):
        return load_json_argument(value, what)
    p = Path(value.strip()).expanduser()
    if path_kind(p) == "directory" and path_kind(p / "ledger.jsonl") == "file":
        p = p / "ledger.jsonl"
    if p.suffix != ".jsonl" or path_kind(p) != "file":
        return load_json_argument(value, what)
    # through the guarded reader: file kind and size, UTF-8, depth and number length per line (issue 41)
    text = readers.read_text(p, f"{what} ledger")
    return [doc for _n, doc in readers.iter_jsonl(text, str(p), hint="repair the file")]


def _verdicts(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get("verdicts"), list):
        items = doc["verdicts"]
    elif isinstance(doc, dict) and "verdict" in doc:
        items = [doc]
    elif isinstance(doc, list):
        items = doc
    else:
        raise FormatError(
            "bottleneck JSON has neither 'verdicts' nor 'verdict'",
            "pass the output of `kernelpilot bottleneck --json` (or one verdict object)",
        )
    out = []
    for i, v in enumerate(items):
        if not isinstance(v, dict) or v.get("verdict") not in VERDICTS:
            raise FormatError(
                f"bottleneck verdict #{i} has no valid 'verdict' (one of {', '.join(VERDICTS)})",
                "pass classify_bottleneck output unchanged",
            )
        conf = v.get("confidence", 0.5)
        if not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
            raise FormatError(f"verdict #{i}: confidence must be a number in 0..1, got {conf!r}", "fix it")
        out.append(v)
    return out


def _isa_for(isa: Any, kernel: str) -> dict[str, Any]:
    if isa is None:
        return {}
    if isinstance(isa, dict) and any(
        k in isa
        for k in ("registers", "spills", "occupancy_limiter", "widest_load_bits", "kernel", "spill_bytes")
    ):
        items: list[Any] = [isa]
    elif isinstance(isa, dict):
        return dict(isa.get(kernel, {})) if isinstance(isa.get(kernel), dict) else {}
    elif isinstance(isa, list):
        items = isa
    else:
        raise FormatError("ISA facts must be an object, a list of objects or {kernel: facts}", "fix the JSON")
    named = [x for x in items if isinstance(x, dict) and x.get("kernel") == kernel]
    if named:
        return dict(named[0])
    unnamed = [x for x in items if isinstance(x, dict) and "kernel" not in x]
    return dict(unnamed[0]) if len(items) == 1 and unnamed else {}


def _spills(f: dict[str, Any]) -> int | None:
    for key in ("spills", "spill_bytes", "local_bytes"):
        if isinstance(f.get(key), (int, float)):
            return int(f[key])
    parts = [f.get(k) for k in ("spill_stores", "spill_loads")]
    if any(isinstance(p, (int, float)) for p in parts):
        return int(sum(p for p in parts if isinstance(p, (int, float))))
    return None


def _isa_factor(lever: Lever, f: dict[str, Any]) -> tuple[float, list[str], str | None]:
    """(factor, evidence lines, reason to skip) from ISA facts for one lever."""
    ev: list[str] = []
    spills = _spills(f)
    widest = f.get("widest_load_bits")
    limiter = str(f.get("occupancy_limiter") or "").lower()
    tensor_ops = f.get("tensor_ops")
    regs = f.get("registers")
    factor = 1.0
    if lever.id == "remove_spills":
        if not spills:
            return (
                0.0,
                [],
                "remove_spills: no spills reported" if spills == 0 else "remove_spills: no ISA facts",
            )
        return 1.3, [f"ISA: {spills} spill bytes/instructions (local memory traffic)"], None
    if lever.id == "vectorize_loads" and isinstance(widest, (int, float)):
        if widest < 128:
            factor, ev = 1.3, [f"ISA: widest global load is {int(widest)} bits (< 128)"]
        else:
            factor, ev = 0.3, [f"ISA: loads already {int(widest)} bits wide"]
    if lever.id == "tensor_cores" and isinstance(tensor_ops, (int, float)):
        if tensor_ops == 0:
            factor, ev = 1.3, ["ISA: no tensor-core (MMA) instructions in the kernel"]
        else:
            factor, ev = 0.5, [f"ISA: already {int(tensor_ops)} tensor-core instructions"]
    if lever.id == "raise_occupancy" and limiter:
        boost = {"registers": 1.3, "shared": 1.2, "shared_memory": 1.2}.get(limiter, 0.9)
        factor = boost
        ev = [f"ISA: occupancy limited by {limiter}" + (f" ({regs} registers/thread)" if regs else "")]
    if lever.id in ("register_tiling", "increase_ilp", "fuse_kernels") and spills:
        factor, ev = 0.7, [f"ISA: already {spills} spills; more live values risk more"]
    return factor, ev, None


def _history_text(rec: dict[str, Any]) -> str:
    keys = (
        "lever",
        "lever_type",
        "change_summary",
        "summary",
        "hypothesis",
        "description",
        "title",
        "change",
    )
    return " ".join(str(rec.get(k, "")) for k in keys).lower()


def _history_factor(lever: Lever, kernel: str, history: list[dict[str, Any]]) -> tuple[float, str]:
    factor = 1.0
    seen: list[str] = []
    for rec in history:
        if not isinstance(rec, dict):
            continue
        if rec.get("kernel") not in (None, "", kernel):
            continue
        text = _history_text(rec)
        if rec.get("lever") != lever.id and not any(k.lower() in text for k in lever.keywords):
            continue
        status = str(rec.get("status", "?"))
        seen.append(status)
        if status in FAILED_STATUSES:
            factor *= FAIL_FACTOR
        elif status == "unstable":
            factor *= UNSTABLE_FACTOR
        elif status == "improved":
            factor *= DONE_FACTOR
    if not seen:
        return 1.0, ""
    return factor, f"tried {len(seen)}x before ({', '.join(seen)}): score x{factor:.2f}"


def _contract(lever: Lever, task: dict[str, Any] | None) -> EvalContract:
    if task is not None:
        metric = task.get("metric", {})
        name = str(metric.get("name", "metric"))
        direction = "higher" if metric.get("direction") == "higher" else "lower"
        checks = [" ".join(c) for c in task.get("correctness_commands", [])] or [
            "(task declares none: add one)"
        ]
        must = (
            f"`kernelpilot eval` status 'improved' on {name} ({direction} is better): "
            "speed-up 95% CI above 1.0 "
            f"and >= {float(task.get('min_effect', 0.01)):.0%}"
        )
    else:
        name, direction = "kernel time (us)", "lower"
        checks = ["the task's correctness command (create a task with --correctness-command)"]
        must = "`kernelpilot eval` status 'improved' (speed-up 95% CI above 1.0) against a fresh baseline"
    return EvalContract(
        metric=name,
        direction=direction,
        must=must,
        correctness=checks,
        prediction=PREDICTIONS[lever.lever_type],
    )


def _evidence_lines(v: dict[str, Any]) -> list[str]:
    out = [
        f"verdict {v['verdict']}"
        + (f" ({v['memory_level']})" if v.get("memory_level") else "")
        + f", confidence {float(v.get('confidence', 0.5)):.2f}"
    ]
    for e in v.get("evidence", []) or []:
        if isinstance(e, dict):
            out.append(
                f"{e.get('metric')}={e.get('value')} "
                f"(threshold {e.get('threshold', '?')}; {e.get('source', '?')})"
            )
    return out


def _causes(v: dict[str, Any], i: int) -> list[Cause] | None:
    raw = v.get("causes")
    if raw is None:
        return None
    try:
        return [Cause.model_validate(c) for c in raw]
    except (ValueError, TypeError) as exc:
        raise FormatError(
            f"bottleneck verdict #{i}: 'causes' are not root-cause records: {str(exc)[:200]}",
            "pass `kernelpilot bottleneck --json` output unchanged",
        ) from None


def _cause_lines(c: Cause) -> list[str]:
    gain = "not measured" if c.gain_pct is None else f"{c.gain_pct:.1f}%"
    return [f"{c.rule}: {c.quantity}", f"gain {gain}: {c.gain_formula}", f"rule source: {c.source}"]


def _make(
    lever: Lever,
    kernel: str,
    files: list[str],
    task: dict[str, Any] | None,
    score: float,
    ev: list[str],
    history_note: str = "",
) -> Suggestion:
    return Suggestion(
        rank=0,
        lever=lever.id,
        lever_type=lever.lever_type,
        title=lever.title,
        target_kernel=kernel,
        files=files,
        rationale=lever.why,
        evidence=ev,
        source=lever.source,
        risk=lever.risk,
        risk_note=lever.risk_note,
        score=round(score, 4),
        history_note=history_note,
        eval_contract=_contract(lever, task),
    )


def _from_causes(
    v: dict[str, Any],
    causes: list[Cause],
    history: list[dict[str, Any]],
    files: list[str],
    task: dict[str, Any] | None,
) -> tuple[list[Suggestion], list[str]]:
    """Levers ranked by the firing rules' estimated gains; contradicted levers left out."""
    kernel = str(v.get("kernel") or "?")
    banned = contradicted_levers([str(r) for r in v.get("ruled_out") or []])
    best: dict[str, Suggestion] = {}
    for c in causes:
        base = (c.gain_pct if c.gain_pct is not None else MIN_GAIN_PCT) / 100.0
        for pos, lid in enumerate(c.levers):
            lever = BY_ID.get(lid)
            if lever is None or lid in banned or lid == "stop_or_fuse":
                continue
            hfac, hnote = _history_factor(lever, kernel, history)
            score = base * (1 - LEVER_STEP * pos) * hfac
            if lid not in best or score > best[lid].score:
                best[lid] = _make(lever, kernel, files, task, score, _cause_lines(c))
                best[lid].history_note = hnote
    out = sorted(best.values(), key=lambda s: -s.score)
    roof = [c for c in causes if c.at_roof]
    if roof:
        out = _with_stop(out, causes, roof[0], kernel, files, task)
    elif not any(c.gain_pct is None or c.gain_pct >= MIN_GAIN_PCT for c in causes):
        why = f"no rule found a gain >= {MIN_GAIN_PCT:g}% and the stop verdict is not MET; {_stop_line(v)}"
        if v["verdict"] == "unknown":
            top = max([s.score for s in out] + [0.0]) + 0.01
            out.insert(0, _make(BY_ID["measure_first"], kernel, files, task, top, [why]))
        else:  # a classified verdict gets its own levers after the small-gain ones, never "not classified"
            low = min([s.score for s in out] + [MIN_GAIN_PCT / 100.0])
            table, _ = _from_table(v, {}, history, files, task, scale=low)
            seen = {s.lever for s in out}
            for s in table:
                if s.lever not in seen and s.lever != "measure_first":
                    s.evidence.insert(0, why)
                    out.append(s)
    skipped = [f"{kernel}: contradicted by the evidence: {', '.join(sorted(banned))}"] if banned else []
    return out, skipped


def _from_table(
    v: dict[str, Any],
    facts: dict[str, Any],
    history: list[dict[str, Any]],
    files: list[str],
    task: dict[str, Any] | None,
    scale: float = 1.0,
) -> tuple[list[Suggestion], list[str]]:
    """The verdict's levers from the lever table (rules.LEVERS), scored by weight x confidence x ISA and
    history factors (x `scale` when they follow a cause-ranked queue)."""
    kernel = str(v.get("kernel") or "?")
    conf = float(v.get("confidence", 0.5))
    level = v.get("memory_level")
    banned = contradicted_levers([str(r) for r in v.get("ruled_out") or []])
    out: list[Suggestion] = []
    skipped: list[str] = []
    for lever in LEVERS:
        if v["verdict"] not in lever.verdicts or lever.id in banned:
            continue
        if lever.memory_levels and level and level not in lever.memory_levels:
            continue
        if lever.id == "fix_bank_conflicts" and level != "l1_shared":
            continue
        ifac, iev, skip = _isa_factor(lever, facts)
        if skip:
            skipped.append(f"{kernel}: {skip}")
            continue
        hfac, hnote = _history_factor(lever, kernel, history)
        evidence = _evidence_lines(v) + iev
        if lever.id == "measure_first":
            evidence += [f"next: {m}" for m in v.get("next_measurements", []) or []]
        score = lever.weight * (0.5 + 0.5 * conf) * ifac * hfac * scale
        out.append(_make(lever, kernel, files, task, score, evidence, hnote))
    return out, skipped


def _stop_line(v: dict[str, Any]) -> str:
    st = v.get("stop")
    return str(st.get("text")) if isinstance(st, dict) and st.get("text") else "no stop verdict (no ceiling)"


def _stop_brief(v: dict[str, Any]) -> str:
    try:
        return StopVerdict.model_validate(v["stop"]).brief()
    except ValueError:
        raise FormatError(
            f"bottleneck verdict of {v.get('kernel')}: 'stop' is not a stop verdict",
            "pass `kernelpilot bottleneck --json` output unchanged",
        ) from None


def _with_stop(
    out: list[Suggestion],
    causes: list[Cause],
    roof: Cause,
    kernel: str,
    files: list[str],
    task: dict[str, Any] | None,
) -> list[Suggestion]:
    """The stop verdict is MET: stop_or_fuse first, except that narrow loads with a gain above noise on a
    kernel still below the measured ceiling get vectorization first (issue 26: the float4 version of a
    32-bit-load kernel at 82% of DRAM peak ran 7% faster)."""
    top = max([s.score for s in out] + [0.0])
    stop = _make(BY_ID["stop_or_fuse"], kernel, files, task, top + 0.01, [ROOF_NOTE, *_cause_lines(roof)])
    narrow = [
        c
        for c in causes
        if c.rule == "narrow_global_loads" and c.gain_pct is not None and c.gain_pct >= MIN_GAIN_PCT
    ]
    vec = [s for s in out if s.lever == "vectorize_loads"]
    if narrow and vec:
        vec[0].score = round(top + 0.02, 4)
        rest = [s for s in out if s is not vec[0]]
        return [vec[0], stop, *rest]
    return [stop, *out]


def suggest_experiments(req: SuggestRequest) -> SuggestResult:
    verdicts = _verdicts(_load(req.bottleneck, "bottleneck"))
    isa = _load(req.isa, "isa") if req.isa else None
    history_doc = _load(req.history, "history") if req.history else []
    if isinstance(history_doc, dict):
        history_doc = history_doc.get("records") or history_doc.get("experiments") or [history_doc]
    if not isinstance(history_doc, list):
        raise FormatError("history must be a JSON list of records (or a ledger.jsonl)", "fix the JSON")
    task: dict[str, Any] | None = None
    if req.task:
        tp = Path(req.task).expanduser()
        tj = tp / "task.json" if tp.is_dir() else tp
        loaded = _load(str(tj), "task")
        task = loaded if isinstance(loaded, dict) else None
    files = list(req.file) or (list(task.get("allowed_files", [])) if task else [])
    cands: list[Suggestion] = []
    skipped: list[str] = []
    stops: list[str] = []
    shapes: dict[str, Shape | None] = {}
    for vi, v in enumerate(verdicts):
        kernel = str(v.get("kernel") or "?")
        shapes[kernel] = kernel_shape(v)[0]
        if isinstance(v.get("stop"), dict):
            stops.append(f"{kernel}: {_stop_brief(v)}")
        causes = _causes(v, vi)
        if causes is not None and (causes or v.get("ruled_out")):
            got, skips = _from_causes(v, causes, history_doc, files, task)
        else:
            got, skips = _from_table(v, _isa_for(isa, kernel), history_doc, files, task)
        cands.extend(got)
        skipped.extend(skips)
    cands.sort(key=lambda s: -s.score)  # stable: a kernel's stop_or_fuse stays above its own levers
    queue = cands[: req.max_items]
    for i, s in enumerate(queue, 1):
        s.rank = i
        s.playbook = sections(s.lever, shapes.get(s.target_kernel))
    note = (
        f"{len(queue)} HYPOTHESES (not results) for {len(verdicts)} kernel verdict(s); test each with "
        "`kernelpilot eval` and keep only what comes back 'improved'."
    )
    return SuggestResult(note=note, suggestions=queue, skipped=skipped, stop_verdicts=stops)
