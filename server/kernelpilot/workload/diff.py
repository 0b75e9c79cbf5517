"""`workload diff A B`: per kernel, per category and for the step, the change in µs per step with a
bootstrap confidence interval over steps, kernels matched by normalised name (`WorkloadKernel.key`).

A change within `threshold_pct` of A reads as no change; beyond it, the verdict is faster/slower when the
interval excludes zero, else unclear. With one step per capture there is nothing to resample: no interval.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kernelpilot.workload.models import DiffRow, WorkloadDiffRequest, WorkloadDiffResult, WorkloadResult


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
    wa = a.step.per_step_wall_us or ([a.step.wall_us] if a.step.wall_us else [a.step.kernel_us])
    wb = b.step.per_step_wall_us or ([b.step.wall_us] if b.step.wall_us else [b.step.kernel_us])
    rows.append(_row("step", "step", "step wall" if a.step.per_step_wall_us else "step", wa, wb, req, rng))
    hot = {k.key for k in a.kernels if k.hot}
    changed = [
        r.short_name for r in rows if r.level == "kernel" and r.key in hot and r.verdict != "no change"
    ]
    verdict = (
        f"no change: every hot kernel within {req.threshold_pct:g} %"
        if not changed
        else f"{len(changed)} hot kernel(s) changed beyond {req.threshold_pct:g} %: {', '.join(changed[:5])}"
    )
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
