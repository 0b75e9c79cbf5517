"""Per-pipe utilization and issue-slot use of one launch, read in one place for the verdict
(`kernelpilot.bottleneck.classify`) and the root-cause rules (`kernelpilot.bottleneck.rules`).

The parsed profile's `pipes` (`kernelpilot.profile.models.PipeUsage`: ncu's
`sm__inst_executed_pipe_<pipe>` utilization, `sm__pipe_<pipe>_cycles_active` beside it) come first; a
profile without them (older JSON, a parse without that field) falls back to the same ncu metrics in the
raw metric map. A JSON profile with neither has no pipe facts: the rules then say so instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelpilot.profile.models import KernelProfile

# ncu pipe -> (busy-cycles metric, instruction-issue metric); the verdict has always read the cycles
# metric where ncu has one (FMA, ALU, FP64, tensor), so it is preferred for those pipes.
_CYCLES = "sm__pipe_{}_cycles_active.avg.pct_of_peak_sustained_active"
_INST = "sm__inst_executed_pipe_{}.avg.pct_of_peak_sustained_active"
RAW_PIPES = ("tensor", "fma", "fp64", "alu", "lsu", "xu", "adu", "uniform", "cbu")
CYCLES_PIPES = ("tensor", "fma", "fp64", "alu")
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
INST_EXECUTED = "smsp__inst_executed.sum"
# Compute pipes: a saturated one makes the kernel compute-bound (LSU/ADU/CBU/uniform feed memory,
# branches and uniform datapath work).
COMPUTE_PIPES = ("tensor", "fma", "fp64", "alu", "xu")


@dataclass(frozen=True)
class PipeReading:
    pipe: str
    pct: float
    metric: str  # the ncu metric the percentage is, as a reader finds it in the CSV


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _from_field(p: KernelProfile) -> dict[str, PipeReading]:
    out: dict[str, PipeReading] = {}
    for u in getattr(p, "pipes", None) or []:  # KernelProfile.pipes (kernelpilot.profile.models.PipeUsage)
        name = getattr(u, "pipe", None)
        if not isinstance(name, str):
            continue
        cyc, inst = _num(getattr(u, "cycles_active_pct", None)), _num(getattr(u, "utilization_pct", None))
        if name in CYCLES_PIPES and cyc is not None:
            out[name] = PipeReading(name, cyc, _CYCLES.format(name))
        elif inst is not None:
            out[name] = PipeReading(name, inst, _INST.format(name))
    return out


def _from_raw(p: KernelProfile) -> dict[str, PipeReading]:
    out: dict[str, PipeReading] = {}
    for name in RAW_PIPES:
        names = ([_CYCLES.format(name)] if name in CYCLES_PIPES else []) + [_INST.format(name)]
        for metric in names:
            v = _num(p.raw_metrics.get(metric))
            if v is not None:
                out[name] = PipeReading(name, v, metric)
                break
    return out


def pipe_utilization(p: KernelProfile) -> dict[str, PipeReading]:
    """Every pipe the input measured, by ncu pipe name; empty when it has none."""
    return _from_field(p) or _from_raw(p)


def issue_active_pct(p: KernelProfile) -> float | None:
    """Share of active cycles the schedulers issued an instruction (the issue roof's utilization)."""
    v = _num(getattr(p, "issue_active_pct", None))
    return v if v is not None else _num(p.raw_metrics.get(ISSUE_ACTIVE))


def warp_instructions(p: KernelProfile) -> float | None:
    v = _num(getattr(p, "inst_executed", None))
    return v if v is not None else _num(p.raw_metrics.get(INST_EXECUTED))


def busiest(readings: dict[str, PipeReading], among: tuple[str, ...] | None = None) -> PipeReading | None:
    known = [r for r in readings.values() if among is None or r.pipe in among]
    return max(known, key=lambda r: r.pct) if known else None


__all__ = [
    "COMPUTE_PIPES",
    "ISSUE_ACTIVE",
    "PipeReading",
    "busiest",
    "issue_active_pct",
    "pipe_utilization",
    "warp_instructions",
]
