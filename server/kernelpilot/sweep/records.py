"""Sweeps and their cells as experiment records, and the summary read back from them.

- The sweep record (`sweep-<name>-<hash>`, tag `sweep`) keeps the spec and the ledger's shapes, so a
  report needs nothing but the database.
- Each cell is one record with the id `<sweep id>.<variant>.<shape key>` and `parent_id` = the sweep:
  the store's unique id makes writing a cell idempotent (a second write of the same cell is skipped),
  and `exp top / similar / failures` see cells like any other attempt (score = speed-up vs the
  baseline at that shape; incorrect cells are `incorrect` and buggy).
- A candidate finished before its shape's baseline is recorded at once without a score, and gets its
  score when the baseline lands (an update of the same record, never a second one).
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from kernelpilot.experiments.errors import StoreCorruptError
from kernelpilot.experiments.record import Description, ExperimentRecord, Status
from kernelpilot.experiments.store import RecordFilter, Store
from kernelpilot.foundation.errors import KernelpilotError, NotFoundError
from kernelpilot.sweep import stats
from kernelpilot.sweep.models import (
    CellOutcome,
    CellRow,
    PairedCell,
    Shape,
    SweepSpec,
    SweepSummary,
    VariantSummary,
    Verdict,
)
from kernelpilot.sweep.spec import LoadedSweep

SWEEP_TAG = "sweep"
CELL_TAG = "sweep-cell"
_STATUS: dict[str, Status] = {
    "win": Status.success,
    "loss": Status.regression,
    "incorrect": Status.incorrect,
}


def cell_id(sweep_id: str, variant: str, shape_key: str) -> str:
    return f"{sweep_id}.{variant}.{shape_key}"


def _int_shapes(fields: dict[str, Any]) -> dict[str, int | list[int]]:
    out: dict[str, int | list[int]] = {}
    for k, v in fields.items():
        if isinstance(v, int) and not isinstance(v, bool):
            out[k] = v
        elif isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            out[k] = list(v)
    return out


def _summary_line(what: str, result: str) -> str:
    room = 80 - len(" - ") - len(result)
    if len(what) > room:
        what = what[: max(room - 1, 1)] + "~"
    return f"{what} - {result}"


# ---------------- roofline ----------------


@dataclass
class RoofPoint:
    floor_us: float
    intensity: float
    citations: list[str]
    bound: Literal["compute", "memory", "issue"] = "memory"


@dataclass
class Roofline:
    """Per-shape roofline floors from cited peaks (computed once per shape, in the driver)."""

    spec: SweepSpec
    gpu_id: str | None = None
    note: str = ""
    _cache: dict[str, RoofPoint | None] = field(default_factory=dict)
    _wiki: Any = None

    def __post_init__(self) -> None:
        from kernelpilot.roofline.models import OpKind

        op: str | None = self.spec.roofline_op
        if op is None and self.spec.operator in typing.get_args(OpKind):
            op = self.spec.operator
        self.op = op
        if self.spec.gpu is None:
            self.note = "no gpu in the spec: no roofline %"
            return
        if op is None:
            self.note = f"operator {self.spec.operator!r} is not an op the roofline counts: no roofline %"
            return
        from kernelpilot.wiki.core import load_wiki

        try:
            self._wiki = load_wiki([])
            self.gpu_id = self._wiki.resolve_gpu(self.spec.gpu)
        except KernelpilotError as exc:
            self.note = f"gpu {self.spec.gpu!r}: {exc.message}"
            self._wiki = None

    def point(self, shape: Shape) -> RoofPoint | None:
        if self._wiki is None or self.op is None:
            return None
        if shape.key in self._cache:
            return self._cache[shape.key]
        from kernelpilot.roofline.core import analyze
        from kernelpilot.roofline.models import RooflineRequest

        skip = {"gpu", "op", "dtype", "wiki", "svg", "measured_time_us", "measured_bytes", "measured_flops"}
        args = {k: v for k, v in shape.fields.items() if k in RooflineRequest.model_fields and k not in skip}
        pt: RoofPoint | None = None
        try:
            res = analyze(
                RooflineRequest(gpu=self.gpu_id or "", op=self.op, dtype=shape.dtype, **args), self._wiki
            )
            pt = RoofPoint(res.time_floor_us, res.arithmetic_intensity, list(res.citations[:2]), res.bound)
        except (KernelpilotError, ValueError) as exc:
            self.note = f"no roofline % for some shapes: {getattr(exc, 'message', str(exc))}"
        self._cache[shape.key] = pt
        return pt


# ---------------- records ----------------


def sweep_record(loaded: LoadedSweep, gpu_id: str | None) -> ExperimentRecord:
    spec = loaded.spec
    n_v, n_s = len(spec.variants), len(loaded.shapes)
    return ExperimentRecord(
        id=loaded.sweep_id,
        operator=spec.operator,
        gpu=gpu_id or "",
        summary=_summary_line(f"sweep {spec.name}", f"{n_v} variants x {n_s} shapes vs {spec.baseline}"),
        status=Status.neutral,
        tags=[SWEEP_TAG],
        raw_result={
            "kind": "sweep",
            "spec": spec.model_dump(mode="json"),
            "spec_path": str(loaded.path),
            "shapes": [s.model_dump(mode="json") for s in loaded.shapes],
        },
        description=Description(approach=f"sweep of {', '.join(spec.variants)} over {n_s} ledger shapes"),
    )


def cell_record(
    loaded: LoadedSweep, out: CellOutcome, shape: Shape, roof: Roofline, unit: str
) -> ExperimentRecord:
    spec = loaded.spec
    role = "baseline" if out.variant == spec.baseline else "candidate"
    t = out.timing
    raw: dict[str, Any] = {
        "kind": "sweep_cell",
        "sweep": loaded.sweep_id,
        "variant": out.variant,
        "role": role,
        "shape_key": shape.key,
        "line": shape.line,
        "model": shape.model,
        "stage": shape.stage,
        "weight": shape.weight,
        "fields": shape.fields,
        "unit": unit,
        "correct": out.correct,
        "max_abs_err": out.max_abs_err,
        "max_rel_err": out.max_rel_err,
        "check_note": out.check_note,
        "worker": {
            "pid": out.worker_pid,
            "host": out.worker_host,
            "visible_devices": out.visible_devices,
            "address": out.worker,
        },
        "device_name": out.device_name,
        "wall_s": out.wall_s,
        "phases_s": out.phases.model_dump(mode="json"),
        "timing": t.model_dump(mode="json") if t else None,
        "speedup": None,
        "speedup_ci": None,
        "verdict": "baseline" if role == "baseline" else "no_baseline",
    }
    pt = roof.point(shape)
    gpu_time = t is not None and (t.method == "cuda_event" or (t.method == "command_metric" and unit == "us"))
    if pt is not None and t is not None and gpu_time and t.median_us > 0:
        from kernelpilot.roofline.stop import below_floor

        below = below_floor(t.median_us, pt.floor_us, pt.bound, "median time")
        raw["roofline"] = {
            "floor_us": pt.floor_us,
            "intensity": pt.intensity,
            "pct": None if below is not None else 100.0 * pt.floor_us / t.median_us,
            "impossible": below.message if below is not None else None,
            "citations": pt.citations,
        }
    dims = ",".join(f"{k}={v}" for k, v in shape.fields.items())
    what = f"{out.variant} {dims} {shape.dtype}"
    score = None
    if role == "candidate" and t is not None and t.paired is not None and out.state != "incorrect":
        status, result, score = _paired_score(spec, raw, t.paired)
    elif out.state == "incorrect":
        raw["verdict"] = "incorrect"
        status, result = Status.incorrect, f"incorrect: {out.check_note or 'check failed'}"[:60]
    elif t is not None:
        status, result = (
            Status.neutral,
            f"{t.median_us:.4g} {unit} ({'baseline' if role == 'baseline' else 'no baseline yet'})",
        )
    else:
        status, result = Status.neutral, "not timed"
    return ExperimentRecord(
        id=cell_id(loaded.sweep_id, out.variant, shape.key),
        parent_id=loaded.sweep_id,
        operator=spec.operator,
        dtype=shape.dtype,
        shapes=_int_shapes(shape.fields),
        gpu=roof.gpu_id or "",
        summary=_summary_line(what, result),
        status=status,
        score=score,
        is_buggy=out.state == "incorrect",
        error_message=(out.check_note or "output differs from the reference")
        if out.state == "incorrect"
        else None,
        raw_result=raw,
        tags=[CELL_TAG, role],
        description=Description(
            approach=f"variant {out.variant} of sweep {spec.name} at {shape.label()}",
            result=result,
        ),
    )


PAIRED_VERDICT: dict[str, Verdict] = {
    "improved": "win", "regressed": "loss", "neutral": "parity", "unstable": "unstable",
}  # fmt: skip
"""A paired cell's verdict is the paired judge's (its CI outside the parity band, as `compare` and `eval`
judge), so a sweep and an eval of the same two kernels cannot disagree."""


def _paired_score(spec: SweepSpec, raw: dict[str, Any], pc: PairedCell) -> tuple[Status, str, float]:
    """A candidate cell timed paired with the baseline, scored at once from the per-pair ratio (of times, or
    of a command's metric in the spec's direction: a higher-is-better metric's speed-up is the ratio):
    (status, result line, speed-up); the speed-up, its CI and the verdict go into `raw`."""
    lo, hi = pc.ratio_ci
    if spec.direction == "lower":
        sp, ci = 1.0 / pc.ratio_median, (1.0 / hi, 1.0 / lo)
    else:
        sp, ci = pc.ratio_median, (lo, hi)
    v = PAIRED_VERDICT[pc.verdict]  # the one judge's answer (timing.stats.judge_ratios), in sweep words
    raw.update(speedup=sp, speedup_ci=[ci[0], ci[1]], verdict=v)
    return _STATUS.get(v, Status.neutral), f"{sp:.3f}x vs {spec.baseline} ({v}, paired: {pc.pairs} pairs)", sp


def scored_changes(rec: ExperimentRecord, base: ExperimentRecord, spec: SweepSpec) -> dict[str, Any] | None:
    """Field changes giving a candidate cell its speed-up vs the recorded baseline cell (None: cannot, or
    already scored from its paired timing)."""
    raw, braw = rec.raw_result, base.raw_result
    t, bt = raw.get("timing"), braw.get("timing")
    if raw.get("role") != "candidate" or raw.get("verdict") == "incorrect" or not t or t.get("paired"):
        return None
    if not bt or braw.get("verdict") == "incorrect":
        return None
    from kernelpilot.timing.stats import speedup_of

    sp = speedup_of(bt["median_us"], t["median_us"], spec.direction)
    if not (math.isfinite(sp) and sp > 0):
        return None
    ci = stats.cell_ci(bt["samples_us"], t["samples_us"], spec.direction)
    v = stats.verdict(sp, ci, bool(t["stable"] and bt["stable"]), spec.parity)
    result = f"{sp:.3f}x vs {spec.baseline} ({v})"
    new_raw = {**raw, "speedup": sp, "speedup_ci": [ci[0], ci[1]], "verdict": v}
    return {
        "score": sp,
        "status": _STATUS.get(v, Status.neutral).value,
        "summary": _summary_line(rec.what(), result),
        "raw_result": new_raw,
        "description": {**rec.description.model_dump(), "result": result},
    }


def load_sweep(store: Store, sweep_id: str) -> tuple[ExperimentRecord, list[ExperimentRecord]]:
    """The sweep record and its recorded cells."""
    try:
        sweep = store.get(sweep_id)
    except NotFoundError as exc:
        raise NotFoundError(
            f"no sweep {sweep_id!r} in {store.url}", "list sweeps with `kernelpilot exp list --tag sweep`"
        ) from exc
    if sweep.raw_result.get("kind") != "sweep":
        raise NotFoundError(f"record {sweep_id!r} is not a sweep", "list sweeps with `exp list --tag sweep`")
    n = store.count(RecordFilter(parent_id=sweep_id, tag=[CELL_TAG]))
    cells = store.query(RecordFilter(parent_id=sweep_id, tag=[CELL_TAG]), limit=max(n, 1), order="oldest")
    return sweep, cells


def _row(rec: ExperimentRecord) -> CellRow:
    raw = rec.raw_result
    t = raw.get("timing") or {}
    roof = raw.get("roofline") or {}
    fields = raw.get("fields", {})
    dims = ",".join(f"{k}={v}" for k, v in fields.items())
    ci = raw.get("speedup_ci")
    return CellRow(
        record_id=rec.id,
        variant=raw["variant"],
        shape_key=raw["shape_key"],
        line=raw["line"],
        label=f"{raw['model']}/{raw['stage']} {dims} {rec.dtype}",
        model=raw["model"],
        stage=raw["stage"],
        dtype=rec.dtype,
        weight=raw["weight"],
        verdict=raw["verdict"],
        median=t.get("median_us"),
        unit=raw.get("unit", "us"),
        iqr=t.get("iqr_us"),
        cv=t.get("cv"),
        stable=t.get("stable"),
        method=t.get("method"),
        gpu=(raw.get("worker") or {}).get("visible_devices"),
        samples=t.get("samples_us", []),
        paired_ratios=(t.get("paired") or {}).get("ratios", []),
        speedup=raw.get("speedup"),
        speedup_ci=list(ci) if ci else None,
        roofline_pct=roof.get("pct"),
        intensity=roof.get("intensity"),
        correct=raw.get("correct"),
        max_abs_err=raw.get("max_abs_err"),
        error=rec.error_message,
    )


def _sweep_plan(sweep: ExperimentRecord) -> tuple[SweepSpec, list[Shape]]:
    """The spec and shapes stored on the sweep record; a record that lost them is a typed error naming it."""
    try:
        spec = SweepSpec.model_validate(sweep.raw_result["spec"])
        return spec, [Shape.model_validate(s) for s in sweep.raw_result["shapes"]]
    except (KeyError, TypeError, ValidationError) as exc:
        raise StoreCorruptError(
            f"sweep record {sweep.id!r} does not hold a readable spec and shape list ({str(exc)[:200]})",
            "run the sweep again under a new name (its cells are kept as records)",
        ) from exc


def _cell_rows(
    cells: list[ExperimentRecord], keys: set[str], variants: list[str]
) -> tuple[list[CellRow], list[str]]:
    """Rows of the cells of this sweep's shapes; a cell record that lost a field is named and left out
    (issue 41: one bad stored record must not make the whole report fail)."""
    rows: list[CellRow] = []
    bad: list[str] = []
    for c in cells:
        if c.raw_result.get("shape_key") not in keys:
            continue
        try:
            row = _row(c)
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            bad.append(f"{c.id}: not a readable sweep cell ({type(exc).__name__}: {str(exc)[:120]})")
            continue
        if row.variant not in variants:
            bad.append(f"{c.id}: variant {row.variant!r} is not in the sweep's spec")
            continue
        rows.append(row)
    rows.sort(key=lambda r: (r.line, variants.index(r.variant)))
    return rows, bad


def summarize(
    sweep: ExperimentRecord, cells: list[ExperimentRecord], db: str, unreadable: list[str] | None = None
) -> SweepSummary:
    spec, shapes = _sweep_plan(sweep)
    keys = {s.key for s in shapes}
    rows, bad = _cell_rows(cells, keys, list(spec.variants))
    base_rows = {r.shape_key: r for r in rows if r.variant == spec.baseline}
    total_weight = sum(s.weight for s in shapes) or 1.0
    summaries: list[VariantSummary] = []
    citations: list[str] = []
    for c in cells:
        for cite in (c.raw_result.get("roofline") or {}).get("citations", []):
            if cite not in citations:
                citations.append(cite)
    for name in spec.variants:
        mine = [r for r in rows if r.variant == name]
        correct = [r for r in mine if r.verdict != "incorrect"]
        vs = VariantSummary(
            variant=name,
            role="baseline" if name == spec.baseline else "candidate",
            cells=len(mine),
            correct_cells=len(correct),
            incorrect=len(mine) - len(correct),
            unstable=sum(1 for r in mine if r.stable is False),
        )
        if name != spec.baseline:
            scored = [r for r in mine if r.speedup is not None]
            vs.wins = sum(r.verdict == "win" for r in scored)
            vs.parity = sum(r.verdict == "parity" for r in scored)
            vs.losses = sum(r.verdict == "loss" for r in scored)
            # a comparison is unstable when either side's timing is: count those, not only this side's
            vs.unstable = sum(r.verdict == "unstable" for r in scored)
            vs.worst = sorted(scored, key=lambda r: r.speedup or 0.0)[:5]
            if scored:
                vs.geomean = stats.weighted_geomean(
                    [r.speedup or 1.0 for r in scored], [r.weight for r in scored]
                )
                lo, hi = stats.geomean_ci(
                    [
                        (
                            None if r.paired_ratios else base_rows[r.shape_key].samples,
                            r.paired_ratios or r.samples,
                            r.weight,
                        )
                        for r in scored
                    ],
                    spec.direction,
                )
                vs.geomean_ci = [lo, hi]
                vs.weight_covered = sum(r.weight for r in scored) / total_weight
            _stop(vs, spec, len(shapes))
        summaries.append(vs)
    return SweepSummary(
        sweep_id=sweep.id,
        name=spec.name,
        db=db,
        operator=spec.operator,
        gpu=sweep.gpu or spec.gpu,
        mode=spec.mode,
        baseline=spec.baseline,
        variants=list(spec.variants),
        shapes=len(shapes),
        cells=rows,
        summaries=summaries,
        roofline_note=str(sweep.raw_result.get("roofline_note", "")),
        citations=citations,
        complete=len(rows) == len(shapes) * len(spec.variants),
        unreadable=[*(unreadable or []), *bad],
    )


def _stop(vs: VariantSummary, spec: SweepSpec, n_shapes: int) -> None:
    st = spec.stop
    if st.min_geomean is None and st.min_shape_speedup is None:
        return
    notes, ok = [], True
    if vs.incorrect:
        ok = False
        notes.append(f"{vs.incorrect} incorrect cell(s)")
    if vs.unstable:
        ok = False
        notes.append(f"{vs.unstable} unstable cell(s): fix the measurement before claiming")
    if vs.geomean is None or vs.cells < n_shapes:
        ok = False
        notes.append(f"only {vs.cells} of {n_shapes} shapes measured")
    if st.min_geomean is not None:
        good = vs.geomean is not None and vs.geomean >= st.min_geomean
        ok = ok and good
        notes.append(f"geomean {vs.geomean or 0:.3f}x {'>=' if good else '<'} {st.min_geomean:.2f}x")
    if st.min_shape_speedup is not None and vs.worst:
        low = vs.worst[0].speedup or 0.0
        good = low >= st.min_shape_speedup
        ok = ok and good
        notes.append(
            f"worst shape L{vs.worst[0].line} {low:.3f}x {'>=' if good else '<'} {st.min_shape_speedup:.2f}x"
        )
    vs.stop_met = ok
    vs.stop_note = "; ".join(notes)
