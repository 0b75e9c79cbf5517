"""The one stop verdict: is a kernel close enough to the roof it is bound by to stop optimizing it alone?

`roofline`, `bottleneck` (its `dram_at_roof` rule, which `suggest` turns into `stop_or_fuse`), the reports
and the skills all read this verdict, so they never disagree. For the binding roof (memory or compute) the
target is `target_fraction` of the *attainable* ceiling: the wiki's measured ceiling (`## Measured`:
measured_copy_bandwidth_tb_s, measured_<dtype>_matmul_tflops) when it has one, else the cited spec peak.
The spec target is shown beside it, never mixed into it: a datasheet bandwidth is not reachable by any
kernel (on H100 the measured copy ceiling is ~90 % of it), so a spec-only target would keep an agent
optimizing a kernel that is already at the practical roof. The verdict is MET exactly when the measured time
is at or under the target (equivalently, achieved rate >= target_fraction x ceiling); `lever` is
`stop_or_fuse` exactly then. A measured time under the physical floor (work / the spec ceiling, or the
ceiling itself when it is the only one) is IMPOSSIBLE, never MET and never a percentage above 100: a timer or
an op description is wrong, and `below_floor` says which to check (`below_floor`, shared with the roofline,
the workspace, sweeps and the workload drill-down). The issue roof (`roofline.issue`) joins the compute and
memory roofs in `binding`: the largest floor binds.
"""

from __future__ import annotations

from typing import Literal

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.roofline.models import CEILING_SCALE as _SCALE
from kernelpilot.roofline.models import BelowFloor, Bound, Ceiling, StopVerdict

DEFAULT_TARGET_FRACTION = 0.9  # the skills' Step 0 stop condition: 90 % of the attainable roof

TIMER_CHECK = (
    "the measured time: re-time the kernel and compare with ncu's gpu__time_duration (a cold timer can read "
    "under the kernel's own span on some hosts; a launch that did less work, e.g. an early exit, is faster)"
)
OP_CHECK: dict[str, str] = {
    "memory": "the op's bytes: its shape fields (rows, cols, numel, m/n/k, k, batch), dtype and "
    "out_dtype, or bytes_moved / measured_bytes: do they count more bytes than the timed launch moves?",
    "compute": "the op's FLOPs: its shape fields (m, n, k, batch, seq_q/seq_k, head_dim, causal) and "
    "dtype, or flops / measured_flops: do they count more FLOPs than the timed launch does?",
    "issue": "the instruction counts: grid, block and trip (more warps than the launch ran?), isa_kernel "
    "(another kernel's code?) or the ncu launch picked (ncu_kernel)",
}
GPU_CHECK = "the GPU: is the one named the one that ran (a slower sibling gives a higher floor)?"


def below_floor(
    measured_time_us: float, floor_us: float, bound: Bound, what: str = "measured time"
) -> BelowFloor | None:
    """IMPOSSIBLE when a measured time is under a physical floor: the numbers and what to check; else None."""
    if not measured_time_us < floor_us:
        return None
    check = [TIMER_CHECK, OP_CHECK[bound], GPU_CHECK]
    message = (
        f"IMPOSSIBLE: {what} {_fmt_us(measured_time_us)} is under the {bound}-bound floor "
        f"{_fmt_us(floor_us)} "
        f"({100 * measured_time_us / floor_us:.1f}% of it); no kernel runs faster than its floor, so a "
        f"measurement or the op description is wrong. Check {check[0]}; then {check[1]}; then {check[2]}"
    )
    return BelowFloor(
        measured_time_us=measured_time_us, floor_us=floor_us, bound=bound, check=check, message=message
    )


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
    basis: str = "",
) -> StopVerdict:
    """The verdict for one roof: `work` (bytes or FLOPs) against `ceiling` at `target_fraction`; `basis`
    says where `work` and the time came from (StopVerdict.basis)."""
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
    # what every verdict of this roof states, whatever its status
    roof = dict(
        bound=bound,
        target_fraction=f,
        ceiling=ceiling,
        spec_ceiling=spec_ceiling,
        work=work,
        target_time_us=target,
        spec_target_time_us=spec_target,
        basis=basis,
    )
    if measured_time_us is None:
        return StopVerdict(
            **roof,
            status="UNKNOWN",
            lever=None,
            text=f"stop verdict UNKNOWN (no measured time): {bound}-bound target ≤ {_fmt_us(target)} "
            f"({what}){beside}",
        )
    physical = spec_ceiling or ceiling
    impossible = below_floor(measured_time_us, work / physical.per_s() * 1e6, bound)
    if impossible is not None:
        return StopVerdict(
            **roof,
            status="IMPOSSIBLE",
            lever=None,
            measured_time_us=measured_time_us,
            below_floor=impossible,
            text="stop verdict IMPOSSIBLE (not MET, not a percentage): "
            + impossible.message.removeprefix("IMPOSSIBLE: "),
        )
    achieved = work / (measured_time_us * 1e-6) / _SCALE[ceiling.unit]
    pct = 100.0 * achieved / ceiling.value
    pct_spec = (
        100.0 * work / (measured_time_us * 1e-6) / spec_ceiling.per_s() if spec_ceiling is not None else None
    )
    met = measured_time_us <= target
    of = f" ({basis})" if basis else ""
    status: Literal["MET", "NOT MET"] = "MET" if met else "NOT MET"
    text = (
        f"stop verdict {status}: {bound}-bound, measured {_fmt_us(measured_time_us)} "
        f"{'≤' if met else '>'} target {_fmt_us(target)} ({what}); achieved "
        f"{_fmt_rate(achieved, ceiling.unit)}{of} = {pct:.1f}% of the {kind} ceiling"
        + (f" ({pct_spec:.1f}% of spec)" if pct_spec is not None else "")
        + beside
        + ("; lever: stop_or_fuse" if met else "")
    )
    return StopVerdict(
        **roof,
        status=status,
        lever="stop_or_fuse" if met else None,
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
    issue: tuple[Ceiling, float] | None = None,
    basis: str = "",
) -> StopVerdict:
    """The verdict for the roof that binds on the attainable ceilings: `compute`/`memory` are each
    (ceiling used, spec ceiling shown beside); `issue` is (issue-rate ceiling, warp instructions) when an
    issue floor is known (its ceiling is cited spec rates: no measured ceiling beside it)."""
    t_compute = flops / compute[0].per_s() if flops > 0 else 0.0
    t_memory = nbytes / memory[0].per_s() if nbytes > 0 else 0.0
    t_issue = issue[1] / issue[0].per_s() if issue is not None and issue[1] > 0 else 0.0
    if issue is not None and t_issue > max(t_compute, t_memory):
        return stop_verdict("issue", issue[1], issue[0], None, measured_time_us, target_fraction, basis)
    if t_compute > t_memory:
        return stop_verdict(
            "compute", flops, compute[0], compute[1], measured_time_us, target_fraction, basis
        )
    return stop_verdict("memory", nbytes, memory[0], memory[1], measured_time_us, target_fraction, basis)


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


__all__ = [
    "DEFAULT_TARGET_FRACTION",
    "BelowFloor",
    "Ceiling",
    "StopVerdict",
    "below_floor",
    "binding",
    "from_cited",
    "stop_verdict",
]
