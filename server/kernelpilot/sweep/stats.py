"""Sweep statistics: the weighted geometric-mean speed-up over shapes and its bootstrap CI, cell verdicts.

The CI is a percentile bootstrap over measurement noise: each replicate resamples every cell's runs
(baseline and variant) with replacement, takes the ratio of medians per shape, and combines the
shapes with their ledger weights. The ledger is the population, so shapes are not resampled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kernelpilot.sweep.models import Verdict

RESAMPLES = 1000


def weighted_geomean(speedups: Sequence[float], weights: Sequence[float]) -> float:
    total = sum(weights)
    return math.exp(sum(w * math.log(s) for s, w in zip(speedups, weights, strict=True)) / total)


def _ratio_draws(base: Sequence[float], cand: Sequence[float], direction: str, rng: object, n: int) -> object:
    import numpy as np

    gen: np.random.Generator = rng  # type: ignore[assignment]
    b = np.asarray(base, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    bm = np.median(b[gen.integers(0, len(b), size=(n, len(b)))], axis=1)
    cm = np.median(c[gen.integers(0, len(c), size=(n, len(c)))], axis=1)
    return bm / cm if direction == "lower" else cm / bm


def _paired_draws(ratios: Sequence[float], direction: str, rng: object, n: int) -> object:
    """Speed-up draws of a paired cell: the median of resampled per-pair ratios (candidate/baseline)."""
    import numpy as np

    gen: np.random.Generator = rng  # type: ignore[assignment]
    r = np.asarray(ratios, dtype=np.float64)
    m = np.median(r[gen.integers(0, len(r), size=(n, len(r)))], axis=1)
    return 1.0 / m if direction == "lower" else m


def geomean_ci(
    cells: Sequence[tuple[Sequence[float] | None, Sequence[float], float]],
    direction: str,
    *,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """CI of the weighted geomean speed-up; `cells` = (baseline samples, variant samples, weight), or
    (None, per-pair ratios, weight) for a cell timed paired with the baseline."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = np.asarray([w for _b, _c, w in cells], dtype=np.float64)
    logs = np.empty((resamples, len(cells)))
    for i, (b, c, _w) in enumerate(cells):
        draws = (
            _ratio_draws(b, c, direction, rng, resamples)
            if b is not None
            else _paired_draws(c, direction, rng, resamples)
        )
        logs[:, i] = np.log(np.asarray(draws))
    gm = np.exp(logs @ weights / weights.sum())
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(gm, [alpha, 1 - alpha])
    return float(lo), float(hi)


def cell_ci(
    base: Sequence[float], cand: Sequence[float], direction: str, seed: int = 0
) -> tuple[float, float]:
    """95% CI of one cell's speed-up (ratio of medians) by the same bootstrap."""
    import numpy as np

    draws = np.asarray(_ratio_draws(base, cand, direction, np.random.default_rng(seed), RESAMPLES))
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return float(lo), float(hi)


def verdict(speedup: float, ci: tuple[float, float], stable: bool, parity: float) -> Verdict:
    """win / loss only when the speed-up is past the parity band AND its CI excludes 1; unstable first."""
    if not stable:
        return "unstable"
    if speedup >= 1 + parity and ci[0] > 1:
        return "win"
    if speedup <= 1 / (1 + parity) and ci[1] < 1:
        return "loss"
    return "parity"
