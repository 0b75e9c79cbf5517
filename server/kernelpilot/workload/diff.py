"""`workload diff A B`: per kernel, per category, for the step (wall, busy, idle) and per idle cause, the
change in µs per step with a bootstrap confidence interval over steps, kernels matched by normalised name
(`WorkloadKernel.key`). The headline (`headline`) names the step wall first and then what moved most.

A change within `threshold_pct` of A reads as no change; beyond it, the verdict is faster/slower when the
interval excludes zero, else unclear. With one step per capture there is nothing to resample: no interval.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kernelpilot.workload.models import (
    CAUSE_WORDS,
    DiffRow,
    WorkloadDiffRequest,
    WorkloadDiffResult,
    WorkloadResult,
)


def _ci(
    a: list[float], b: list[float], req: WorkloadDiffRequest, rng: Any
) -> tuple[float | None, float | None]:
    if len(a) < 2 or len(b) < 2:
        return None, None
    import numpy as np

    xa, xb = np.asarray(a), np.asarray(b)
    ma = xa[rng.integers(0, len(xa), (req.resamples, len(xa)))].mean(axis=1)
    mb = xb[rng.integers(0, len(xb), (req.resamples, len(xb)))].mean(axis=1)
    tail = (1.0 - req.confidence) / 2 * 100
    lo, hi = np.percentile(mb - ma, [tail, 100 - tail])
    return float(lo), float(hi)


def _row(
    level: str,
    key: str,
    short: str,
    a: list[float] | None,
    b: list[float] | None,
    req: WorkloadDiffRequest,
    rng: Any,
) -> DiffRow:
    ma = sum(a) / len(a) if a else None
    mb = sum(b) / len(b) if b else None
    if ma is None or mb is None:
        return DiffRow(
            level=level,
            key=key,
            short_name=short,
            a_us_per_step=ma,
            b_us_per_step=mb,
            delta_us=(mb or 0.0) - (ma or 0.0),
            delta_pct=None,
            ci_low_us=None,
            ci_high_us=None,
            verdict="new" if ma is None else "gone",
        )
    delta = mb - ma
    pct = delta / ma * 100 if ma > 0 else None
    lo, hi = _ci(a or [], b or [], req, rng)
    if pct is not None and abs(pct) <= req.threshold_pct:
        verdict = "no change"
    elif lo is not None and hi is not None and (lo > 0 or hi < 0):
        verdict = "slower" if delta > 0 else "faster"
    else:
        verdict = "unclear"
    return DiffRow(
        level=level,
        key=key,
        short_name=short,
        a_us_per_step=ma,
        b_us_per_step=mb,
        delta_us=delta,
        delta_pct=pct,
        ci_low_us=lo,
        ci_high_us=hi,
        verdict=verdict,
    )


def _per_step(k: Any, steps: int) -> list[float]:
    return list(k.per_step_us) if k.per_step_us else [k.us_per_step] * 1


def _categories(res: WorkloadResult) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(lambda: [0.0] * res.step.steps)
    for k in res.kernels:
        ps = _per_step(k, res.step.steps)
        acc = out[k.category]
        if len(acc) != len(ps):
            out[k.category] = acc = [0.0] * len(ps)
        for i, v in enumerate(ps):
            acc[i] += v
    return dict(out)


def _series(per_step: list[float], median: float | None) -> list[float] | None:
    if per_step:
        return list(per_step)
    return [median] if median is not None else None


def _step_rows(a: WorkloadResult, b: WorkloadResult, req: WorkloadDiffRequest, rng: Any) -> list[DiffRow]:
    """The step judged as a whole: wall, busy, idle, and each idle cause (workload/idle.py)."""
    sa, sb = a.step, b.step
    wa = _series(sa.per_step_wall_us, sa.wall_us) or [sa.kernel_us]
    wb = _series(sb.per_step_wall_us, sb.wall_us) or [sb.kernel_us]
    rows = [_row("step", "wall", "step wall" if sa.per_step_wall_us else "step", wa, wb, req, rng)]
    if sa.event_step_us is not None and sb.event_step_us is not None:  # the step without the tracer
        rows.append(
            _row(
                "step",
                "event",
                "step (CUDA events, no tracer)",
                [sa.event_step_us],
                [sb.event_step_us],
                req,
                rng,
            )
        )
    for key, xa, xb in (
        ("busy", _series(sa.per_step_busy_us, sa.busy_us), _series(sb.per_step_busy_us, sb.busy_us)),
        ("idle", _series(sa.per_step_idle_us, sa.idle_us), _series(sb.per_step_idle_us, sb.idle_us)),
    ):
        if xa is not None or xb is not None:
            rows.append(_row("step", key, f"step {key}", xa, xb, req, rng))
    ca = {c.cause: c.per_step_us or [c.us_per_step] for c in sa.idle_causes}
    cb = {c.cause: c.per_step_us or [c.us_per_step] for c in sb.idle_causes}
    for cause in [c.cause for c in sa.idle_causes] + [c for c in cb if c not in ca]:
        xa, xb = ca.get(cause), cb.get(cause)
        if max(sum(xa or [0.0]), sum(xb or [0.0])) <= 0:
            continue  # a cause neither step has: no row
        rows.append(_row("idle", cause, f"idle: {CAUSE_WORDS[cause]}", xa, xb, req, rng))
    return rows


def headline(rows: list[DiffRow], changed: list[str], threshold_pct: float) -> str:
    """What changed most: the step wall first when it moved, then the row (busy, idle cause, kernel) with
    the largest |Δ µs| among those beyond the threshold; 'no change' only when the wall and every hot kernel
    held within it."""
    # the step time without the tracer when both captures have it (the traced wall carries the tracer's
    # host cost, which varies between runs), else the traced wall
    steps = {r.key: r for r in rows if r.level == "step"}
    wall = steps.get("event") or steps.get("wall")
    label = "step (CUDA events)" if "event" in steps else "step wall"
    has_causes = any(r.level == "idle" for r in rows)  # then the causes say more than the idle total
    moved = [
        r
        for r in rows
        if r.verdict != "no change"
        and r.level != "category"
        and not (r.level == "step" and r.key in ("wall", "event"))
        and not (has_causes and r.key == "idle")
    ]
    top = max(moved, key=lambda r: abs(r.delta_us), default=None)
    wall_moved = wall is not None and wall.verdict != "no change"
    if not wall_moved and not changed:
        return f"no change: the {label} and every hot kernel within {threshold_pct:g} %"
    parts = []
    if wall is not None and wall_moved:
        pct = f" ({wall.delta_pct:+.1f} %)" if wall.delta_pct is not None else ""
        spans = "interval spans zero" if wall.ci_low_us is not None else "one figure each, no interval"
        how = {"faster": "faster", "slower": "slower"}.get(wall.verdict, f"changed ({spans})")
        parts.append(f"{label} {how} by {abs(wall.delta_us):.1f} µs{pct}")
    else:
        parts.append(f"{label} within {threshold_pct:g} %")
    if top is not None:
        pct = f" ({top.delta_pct:+.1f} %)" if top.delta_pct is not None else ""
        parts.append(f"most changed: {top.short_name} {top.delta_us:+.1f} µs/step{pct}, {top.verdict}")
    if changed:
        parts.append(f"{len(changed)} hot kernel(s) beyond {threshold_pct:g} %: {', '.join(changed[:5])}")
    return "; ".join(parts)


def diff_results(a: WorkloadResult, b: WorkloadResult, req: WorkloadDiffRequest) -> WorkloadDiffResult:
    import numpy as np

    rng = np.random.default_rng(0)
    ka = {k.key: k for k in a.kernels}
    kb = {k.key: k for k in b.kernels}
    rows = []
    for key in sorted(
        set(ka) | set(kb),
        key=lambda x: -max(ka[x].us_per_step if x in ka else 0.0, kb[x].us_per_step if x in kb else 0.0),
    ):
        x, y = ka.get(key), kb.get(key)
        short = (x or y).short_name  # type: ignore[union-attr]
        rows.append(
            _row(
                "kernel",
                key,
                short,
                _per_step(x, a.step.steps) if x else None,
                _per_step(y, b.step.steps) if y else None,
                req,
                rng,
            )
        )
    ca, cb = _categories(a), _categories(b)
    for cat in sorted(set(ca) | set(cb)):
        rows.append(_row("category", cat, cat, ca.get(cat), cb.get(cat), req, rng))
    rows += _step_rows(a, b, req, rng)
    hot = {k.key for k in a.kernels if k.hot}
    changed = [
        r.short_name for r in rows if r.level == "kernel" and r.key in hot and r.verdict != "no change"
    ]
    verdict = headline(rows, changed, req.threshold_pct)
    steps = min(a.step.steps, b.step.steps)
    method = (
        f"per-step µs matched by normalised name; {req.confidence:.0%} bootstrap interval of the mean "
        f"difference over steps ({req.resamples} resamples)"
        if steps > 1
        else "one step per capture: differences without an interval"
    )
    return WorkloadDiffResult(
        a=req.a, b=req.b, method=method, rows=rows, hot_changed=changed, verdict=verdict
    )
