"""The one stop verdict: is a kernel close enough to the roof it is bound by to stop optimizing it alone?

`roofline`, `bottleneck` (its `dram_at_roof` rule, which `suggest` turns into `stop_or_fuse`), the reports
and the skills all read this verdict, so they never disagree. For the binding roof (memory or compute) the
target is `target_fraction` of the *attainable* ceiling: the wiki's measured ceiling (`## Measured`:
measured_copy_bandwidth_tb_s, measured_<dtype>_matmul_tflops) when it has one, else the cited spec peak.
The spec target is shown beside it, never mixed into it: a datasheet bandwidth is not reachable by any
kernel (on H100 the measured copy ceiling is ~90 % of it), so a spec-only target would keep an agent
optimizing a kernel that is already at the practical roof. The verdict is MET exactly when the measured time
is at or under the target (equivalently, achieved rate >= target_fraction x ceiling); `lever` is
`stop_or_fuse` exactly then.
"""

from __future__ import annotations

from typing import Literal

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.roofline.models import CEILING_SCALE as _SCALE
from kernelpilot.roofline.models import Bound, Ceiling, StopVerdict

DEFAULT_TARGET_FRACTION = 0.9  # the skills' Step 0 stop condition: 90 % of the attainable roof


def _fmt_us(us: float) -> str:
    return f"{us:.4g} µs" if us < 1e4 else f"{us / 1e3:.4g} ms"


def _fmt_rate(v: float, unit: str) -> str:
    return f"{v:.4g} {unit}"


def stop_verdict(
    bound: Bound,
    work: float,
    ceiling: Ceiling,
    spec_ceiling: Ceiling | None = None,
    measured_time_us: float | None = None,
    target_fraction: float = DEFAULT_TARGET_FRACTION,
) -> StopVerdict:
    """The verdict for one roof: `work` (bytes or FLOPs) against `ceiling` at `target_fraction`."""
    if not 0 < target_fraction <= 1:
        raise InvalidArgumentError(
            f"target fraction must be in (0, 1], got {target_fraction}", "e.g. 0.9 for 90% of the roof"
        )
    if not work > 0:
        raise InvalidArgumentError(f"{bound} work must be > 0, got {work}", "count the bytes or FLOPs")
    if measured_time_us is not None and not measured_time_us > 0:
        raise InvalidArgumentError(f"measured time must be > 0 µs, got {measured_time_us}", "time it")
    if spec_ceiling is not None and spec_ceiling.citation == ceiling.citation:
        spec_ceiling = None
    f = target_fraction
    target = work / ceiling.per_s() / f * 1e6
    spec_target = work / spec_ceiling.per_s() / f * 1e6 if spec_ceiling else None
    kind = "measured" if ceiling.measured else "spec"
    what = f"{f:.0%} of the {kind} ceiling {ceiling.citation}"
    beside = (
        f"; spec target {_fmt_us(spec_target)} ({f:.0%} of {spec_ceiling.citation}) shown beside, not used"
        if spec_ceiling and spec_target is not None
        else ""
    )
    if measured_time_us is None:
        return StopVerdict(
            bound=bound,
            status="UNKNOWN",
            lever=None,
            target_fraction=f,
            ceiling=ceiling,
            spec_ceiling=spec_ceiling,
            work=work,
            target_time_us=target,
            spec_target_time_us=spec_target,
            text=f"stop verdict UNKNOWN (no measured time): {bound}-bound target ≤ {_fmt_us(target)} "
            f"({what}){beside}",
        )
    achieved = work / (measured_time_us * 1e-6) / _SCALE[ceiling.unit]
    pct = 100.0 * achieved / ceiling.value
    pct_spec = (
        100.0 * work / (measured_time_us * 1e-6) / spec_ceiling.per_s() if spec_ceiling is not None else None
    )
    met = measured_time_us <= target
    status: Literal["MET", "NOT MET"] = "MET" if met else "NOT MET"
    text = (
        f"stop verdict {status}: {bound}-bound, measured {_fmt_us(measured_time_us)} "
        f"{'≤' if met else '>'} target {_fmt_us(target)} ({what}); achieved "
        f"{_fmt_rate(achieved, ceiling.unit)} = {pct:.1f}% of the {kind} ceiling"
        + (f" ({pct_spec:.1f}% of spec)" if pct_spec is not None else "")
        + beside
        + ("; lever: stop_or_fuse" if met else "")
    )
    return StopVerdict(
        bound=bound,
        status=status,
        lever="stop_or_fuse" if met else None,
        target_fraction=f,
        ceiling=ceiling,
        spec_ceiling=spec_ceiling,
        work=work,
        target_time_us=target,
        spec_target_time_us=spec_target,
        measured_time_us=measured_time_us,
        achieved=achieved,
        pct_of_ceiling=pct,
        pct_of_spec=pct_spec,
        headroom_pct=max(0.0, 100.0 - pct),
        text=text,
    )


def binding(
    flops: float,
    nbytes: float,
    compute: tuple[Ceiling, Ceiling | None],
    memory: tuple[Ceiling, Ceiling | None],
    measured_time_us: float | None = None,
    target_fraction: float = DEFAULT_TARGET_FRACTION,
) -> StopVerdict:
    """The verdict for the roof that binds on the attainable ceilings: `compute`/`memory` are each
    (ceiling used, spec ceiling shown beside)."""
    t_compute = flops / compute[0].per_s() if flops > 0 else 0.0
    t_memory = nbytes / memory[0].per_s() if nbytes > 0 else 0.0
    if t_compute > t_memory:
        return stop_verdict("compute", flops, compute[0], compute[1], measured_time_us, target_fraction)
    return stop_verdict("memory", nbytes, memory[0], memory[1], measured_time_us, target_fraction)


def from_cited(cv: object) -> Ceiling:
    """A `Ceiling` from a wiki `CitedValue` (spec or `## Measured` line)."""
    from kernelpilot.wiki.models import CitedValue

    if not isinstance(cv, CitedValue):
        raise InvalidArgumentError(
            f"a ceiling must be a cited wiki value, got {type(cv).__name__}", "look it up in the wiki"
        )
    return Ceiling(
        metric=cv.metric, value=cv.number(), unit=cv.unit, citation=cv.citation(), measured=cv.measured
    )


__all__ = ["DEFAULT_TARGET_FRACTION", "Ceiling", "StopVerdict", "binding", "from_cited", "stop_verdict"]
