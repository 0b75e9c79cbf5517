"""The cause a classified verdict carries when no specific root-cause rule fired on a full-set profile.

A verdict with `causes: []` left `suggest` with nothing to rank and sent the reader back to measure a profile
it already had (issue 32). When the input has the counters the rules read (stall mix, pipe utilization) and
none fired, the verdict's own levers are named as one cause, with every rule that was ruled out and why as
its evidence, so the reader sees what was checked and the next experiment at once. Its gain is unmeasured.
"""

from __future__ import annotations

from kernelpilot.bottleneck.models import Cause, Evidence
from kernelpilot.bottleneck.pipes import pipe_utilization
from kernelpilot.bottleneck.rules.base import NCU_GUIDE
from kernelpilot.bottleneck.rules.issue import kind
from kernelpilot.profile.models import KernelProfile

RULE = "verdict_levers"
_LEVERS: dict[str, tuple[str, ...]] = {
    "memory_bound": ("increase_ilp", "fuse_kernels", "reuse_on_chip"),
    "compute_bound": ("fewer_instructions", "cheaper_instructions"),
    "latency_bound": ("increase_ilp", "raise_occupancy", "launch_config"),
    "sync_bound": ("fewer_barriers", "warp_shuffles"),
}
_KIND_FIRST = {
    "selection": ("cancel_softmax_denominator", "packed_key_selection"),
    "reduction": ("row_mapping", "fewer_shuffle_steps"),
}


def full_set_given(p: KernelProfile) -> bool:
    """The input carries what the issue/latency/memory rules read: a stall mix and per-pipe utilization
    (ncu `--set full`, or a profile JSON parsed with its raw metrics / pipes)."""
    return bool(p.warp_stalls) and bool(pipe_utilization(p))


def fallback_cause(p: KernelProfile, verdict: str, summary: str, ruled_out: list[str], where: str) -> Cause:
    levers = _LEVERS.get(verdict, ("increase_ilp",))
    if verdict in ("compute_bound", "latency_bound") and kind(p.kernel) in _KIND_FIRST:
        levers = (*_KIND_FIRST[kind(p.kernel)], *levers)
    names = [r.split(":", 1)[0] for r in ruled_out]
    return Cause(
        rule=RULE,
        title="No specific root-cause rule fired: the verdict's own levers",
        quantity=f"{summary}; {len(names)} rules evaluated on this full-set profile and ruled out "
        f"({', '.join(names)}): see the evidence for each reason",
        value=float(len(names)),
        unit="rules ruled out",
        gain_pct=None,
        gain_formula="not measured: no rule quantified a removable cost; the levers are the verdict's",
        levers=list(levers),
        evidence=[
            Evidence(
                metric=f"ruled_out.{r.split(':', 1)[0]}",
                value=r.split(":", 1)[1].strip() if ":" in r else r,
                threshold="rule evaluated, did not fire",
                source=where,
            )
            for r in ruled_out
        ],
        source=f"{NCU_GUIDE} (Speed Of Light; Warp State Statistics)",
    )


__all__ = ["RULE", "fallback_cause", "full_set_given"]
