"""Summary statistics of per-run samples and the speed-up confidence interval.

Owns: median / min / max / IQR / coefficient of variation / stability verdict of one sample set, and
the bootstrap confidence interval of a ratio of medians between two sample sets. It does not run
anything and knows nothing about GPUs or tasks.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import Field

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.models import Result

DEFAULT_CV_THRESHOLD = 0.02  # stable if stdev/mean <= 2 % (the default of `kernelpilot time`)


class SampleStats(Result):
    """Spread of one set of per-run measurements (all in the unit of the samples)."""

    count: int
    median: float
    mean: float
    min: float
    max: float
    q1: float = Field(description="25th percentile (linear interpolation).")
    q3: float = Field(description="75th percentile (linear interpolation).")
    iqr: float = Field(description="q3 - q1.")
    stdev: float = Field(description="Sample standard deviation (n-1).")
    cv: float = Field(description="Coefficient of variation stdev/mean (a fraction, 0.01 = 1 %).")
    cv_threshold: float
    stable: bool = Field(description="True when cv <= cv_threshold.")
    verdict: str = Field(description="'stable' or 'unstable (cv X% > Y%)'.")


def quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default 'linear' method)."""
    if len(sorted_xs) == 1:
        return float(sorted_xs[0])
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    frac = pos - lo
    return float(sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * frac)


def summarize(samples: Sequence[float], cv_threshold: float = DEFAULT_CV_THRESHOLD) -> SampleStats:
    """Summarize samples; at least one sample, all finite."""
    if not samples:
        raise InvalidArgumentError("no samples to summarize", "measure at least one run")
    xs = [float(x) for x in samples]
    if not all(math.isfinite(x) for x in xs):
        raise InvalidArgumentError("samples contain NaN or infinity", "check the metric the command prints")
    s = sorted(xs)
    mean = statistics.fmean(s)
    stdev = statistics.stdev(s) if len(s) > 1 else 0.0
    cv = stdev / abs(mean) if mean != 0 else (0.0 if stdev == 0 else math.inf)
    q1, q3 = quantile(s, 0.25), quantile(s, 0.75)
    stable = cv <= cv_threshold
    verdict = "stable" if stable else f"unstable (cv {cv * 100:.2f}% > {cv_threshold * 100:.2f}%)"
    return SampleStats(
        count=len(s),
        median=quantile(s, 0.5),
        mean=mean,
        min=s[0],
        max=s[-1],
        q1=q1,
        q3=q3,
        iqr=q3 - q1,
        stdev=stdev,
        cv=cv,
        cv_threshold=cv_threshold,
        stable=stable,
        verdict=verdict,
    )


def speedup_of(baseline_median: float, candidate_median: float, direction: str) -> float:
    """Speed-up > 1 means the candidate is better: base/cand for 'lower', cand/base for 'higher'."""
    if direction == "lower":
        return baseline_median / candidate_median
    return candidate_median / baseline_median


def bootstrap_speedup_ci(
    baseline: Sequence[float],
    candidate: Sequence[float],
    direction: str,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of the ratio of medians (seeded, so the same samples give the same CI)."""
    import numpy as np

    if not 0 < confidence < 1:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence}", "use e.g. 0.95")
    rng = np.random.default_rng(seed)
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    bi = rng.integers(0, len(b), size=(resamples, len(b)))
    ci = rng.integers(0, len(c), size=(resamples, len(c)))
    bm = np.median(b[bi], axis=1)
    cm = np.median(c[ci], axis=1)
    ratio = bm / cm if direction == "lower" else cm / bm
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(ratio, [alpha, 1 - alpha])
    return float(lo), float(hi)


def paired_ratio_ci(
    ratios: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """(median, CI low, CI high) of per-pair ratios: percentile bootstrap of the median, seeded.

    Pairs are resampled whole, so what both sides shared in a pair (the GPU's clock, its temperature, the
    neighbours in the queue) cancels inside each ratio instead of widening the interval."""
    import numpy as np

    if not ratios:
        raise InvalidArgumentError("no paired ratios to summarize", "time at least one pair")
    if not 0 < confidence < 1:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence}", "use e.g. 0.95")
    r = np.asarray(ratios, dtype=np.float64)
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise InvalidArgumentError("paired ratios must be finite and > 0", "check both sides' samples")
    med = float(np.median(r))
    if len(r) == 1:
        return med, med, med
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(r), size=(resamples, len(r)))
    meds = np.median(r[idx], axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(meds, [alpha, 1 - alpha])
    return med, float(lo), float(hi)


def ratio_verdict(
    median: float,
    lo: float,
    hi: float,
    direction: str,
    min_effect: float,
    max_halfwidth: float,
    allowance: float = 0.0,
) -> str:
    """improved / regressed / neutral / unstable from a candidate/baseline ratio and its CI.

    `direction` is the metric's ('lower' for times). Improved/regressed need the whole CI, widened by
    `allowance` (a fraction) at each end, outside the minimum-effect band [1/(1+min_effect), 1+min_effect]:
    an effect is claimed only when it is at least `min_effect` with confidence, not merely when it is not
    zero. The allowance is for what the per-pair CI cannot see (docs/eval-design.md, "A self-compare that
    read regressed"). Otherwise the answer is neutral when the CI is tight (half-width at most
    `max_halfwidth` of the median) and unstable when it is not (the ratio itself is not resolved)."""
    band_hi, band_lo = 1.0 + min_effect, 1.0 / (1.0 + min_effect)
    up, down = lo * (1.0 - allowance) > band_hi, hi * (1.0 + allowance) < band_lo
    better, worse = (down, up) if direction == "lower" else (up, down)
    if better:
        return "improved"
    if worse:
        return "regressed"
    return "neutral" if (hi - lo) / 2 <= max_halfwidth * median else "unstable"


def judge_ratios(
    ratios: Sequence[float],
    direction: str,
    min_effect: float,
    max_halfwidth: float,
    allowance: float = 0.0,
) -> tuple[float, float, float, str]:
    """(median, CI low, CI high, verdict) of per-pair ratios: `paired_ratio_ci`, then `ratio_verdict`.
    The one judge of `compare`, eval's paired command path and paired sweep cells (and of replays of
    recorded runs in tests/timing/test_paired_replay.py)."""
    med, lo, hi = paired_ratio_ci(ratios)
    return med, lo, hi, ratio_verdict(med, lo, hi, direction, min_effect, max_halfwidth, allowance)
