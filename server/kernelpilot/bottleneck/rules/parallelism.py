"""Parallelism root causes: launch overhead of tiny grids, grids below one wave, tail effect, occupancy
limited by registers / shared memory / block size, and low eligible warps (the stall mix). They read the
launch__* metrics (present in every ncu capture, roofline mode included) and warp-state metrics."""

from __future__ import annotations

import math

from kernelpilot.bottleneck.rules.base import BPG, NCU_GUIDE, Clear, Ctx, Finding, Rule

LAUNCH_BOUND_US = 10.0  # kernelpilot: a kernel this short is within a few launch latencies
FEW_WAVES = 0.5  # kernelpilot (as classify): fewer than half a wave of blocks
TAIL_IDLE = 0.10  # kernelpilot: the last partial wave leaves >= 10% of the SM-time idle
OCC_LOW_PCT = 50.0  # kernelpilot: theoretical occupancy below half of the SM's warps
OCC_BINDING = 0.8  # achieved >= 80% of theoretical: the limit binds
SOL_LATENCY_PCT = 60.0  # ncu SOL rule: below 60% on all units points to latency
ISSUE_LOW_PCT = 50.0

_LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "warps (block size)": "launch__occupancy_limit_warps",
    "blocks per SM (block size)": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
STALL_LEVERS = {
    "long_scoreboard": ("increase_ilp", "raise_occupancy"),
    "lg_throttle": ("vectorize_loads", "increase_ilp"),
    "wait": ("increase_ilp",),
    "barrier": ("fewer_barriers", "warp_shuffles"),
    "membar": ("fewer_barriers",),
    "mio_throttle": ("fix_bank_conflicts", "register_tiling"),
    "short_scoreboard": ("register_tiling", "cheaper_instructions"),
    "math_pipe_throttle": ("cheaper_instructions",),
    "drain": ("coalesce_access",),
    "no_instruction": ("cheaper_instructions",),
}


def _duration_us(c: Ctx) -> float | None:
    return None if c.p.duration_ns is None else c.p.duration_ns / 1e3


def check_launch_overhead(c: Ctx) -> Finding | Clear | None:
    dur, waves = _duration_us(c), c.f("launch__waves_per_multiprocessor")
    if dur is None or waves is None:
        return None
    if dur >= LAUNCH_BOUND_US or waves >= 1.0:
        return Clear(f"{dur:.1f} us, {waves:.2f} waves")
    idle = 1.0 - waves
    grid = c.f("launch__grid_size")
    return Finding(
        quantity=f"{dur:.2f} us kernel, grid {grid or 0:.0f} blocks = {waves:.3f} waves: launch cost "
        "dominates",
        value=dur,
        unit="us",
        gain_pct=idle * 100,
        gain_formula=f"GPU share idle during the kernel: 1 - {waves:.3f} waves = {idle * 100:.1f}% (the host "
        "launch gap itself is not in the capture)",
        levers=("fuse_kernels", "cuda_graphs"),
        evidence=[
            ("gpu__time_duration.sum", (dur or 0.0) * 1e3),
            ("launch__waves_per_multiprocessor", waves),
        ],
    )


def check_few_waves(c: Ctx) -> Finding | Clear | None:
    dur, waves = _duration_us(c), c.f("launch__waves_per_multiprocessor")
    if dur is None or waves is None:
        return None
    if waves >= FEW_WAVES or dur < LAUNCH_BOUND_US:
        return Clear(f"{waves:.2f} waves per SM")
    ach = c.p.achieved_occupancy_pct
    return Finding(
        quantity=f"grid fills {waves:.2f} waves of the SMs"
        + (f" (achieved occupancy {ach:.1f}%)" if ach is not None else "")
        + ": too few warps to hide latency",
        value=waves,
        unit="waves",
        gain_pct=(1.0 - waves) * 100,
        gain_formula=f"SM capacity left unused: 1 - {waves:.2f} waves = {(1 - waves) * 100:.1f}%",
        levers=("launch_config", "increase_ilp"),
        evidence=[
            ("launch__waves_per_multiprocessor", waves),
            ("launch__grid_size", c.f("launch__grid_size") or 0),
        ],
    )


def check_tail(c: Ctx) -> Finding | Clear | None:
    waves = c.f("launch__waves_per_multiprocessor")
    if waves is None:
        return None
    if waves < 1.0:
        return Clear(f"{waves:.2f} waves (below one wave: see few_waves)")
    full = math.ceil(waves - 1e-9)
    idle = (full - waves) / full
    if idle < TAIL_IDLE:
        return Clear(f"{waves:.2f} waves: last wave idles {idle:.0%} of SM time")
    return Finding(
        quantity=f"{waves:.2f} waves: the last wave runs {waves - (full - 1):.2f} of a wave, "
        f"SMs idle {idle:.0%} "
        "of the time",
        value=waves,
        unit="waves",
        gain_pct=idle * 100,
        gain_formula=f"(ceil(waves) - waves) / ceil(waves) = ({full} - {waves:.2f}) / {full} = "
        f"{idle * 100:.1f}% "
        "(equal-cost blocks)",
        levers=("launch_config",),
        evidence=[
            ("launch__waves_per_multiprocessor", waves),
            ("launch__grid_size", c.f("launch__grid_size") or 0),
        ],
    )


def check_occupancy(c: Ctx) -> Finding | Clear | None:
    theo, ach = c.p.theoretical_occupancy_pct, c.p.achieved_occupancy_pct
    limits = {k: c.f(m) for k, m in _LIMITS.items()}
    known = {k: v for k, v in limits.items() if v is not None and v > 0}
    busiest = c.busiest_unit()
    if theo is None or ach is None or not known or busiest is None:
        return None
    lim = min(known, key=lambda k: known[k])
    if theo >= OCC_LOW_PCT or ach < OCC_BINDING * theo or busiest >= SOL_LATENCY_PCT:
        return Clear(f"theoretical {theo:.0f}%, achieved {ach:.0f}%, busiest unit {busiest:.0f}%")
    nxt = min((v for k, v in known.items() if k != lim), default=known[lim])
    theo_next = min(100.0, theo * nxt / known[lim])
    keep = max(busiest / 100, theo / theo_next)
    levers = ("launch_config",) if "block size" in lim else ("raise_occupancy", "increase_ilp")
    return Finding(
        quantity=f"theoretical occupancy {theo:.1f}% limited by {lim} ({known[lim]:.0f} blocks/SM), achieved "
        f"{ach:.1f}%; next limit allows {theo_next:.0f}%",
        value=theo,
        unit="% theoretical occupancy",
        gain_pct=(1 - keep) * 100,
        gain_formula=f"1 - max(busiest unit {busiest:.1f}%, {theo:.1f}/{theo_next:.0f} occupancy) = "
        f"{(1 - keep) * 100:.1f}%",
        levers=levers,
        evidence=[
            ("sm__maximum_warps_per_active_cycle_pct", theo),
            ("sm__warps_active.avg.pct_of_peak_sustained_active", ach),
            (_LIMITS[lim], known[lim]),
        ],
    )


def check_eligible(c: Ctx) -> Finding | Clear | None:
    elig = c.f("smsp__warps_eligible.avg.per_cycle_active")
    issue = c.f("smsp__issue_active.avg.pct_of_peak_sustained_active")
    busiest, top = c.busiest_unit(), c.top_stall()
    if elig is None or issue is None or busiest is None or top is None:
        return None
    if issue >= ISSUE_LOW_PCT or busiest >= SOL_LATENCY_PCT or elig >= 1.0:
        return Clear(f"issue {issue:.0f}% busy, {elig:.2f} eligible warps/cycle, busiest unit {busiest:.0f}%")
    reason, share = top
    head = 100 - max(busiest, issue)
    return Finding(
        quantity=f"{elig:.2f} eligible warps per cycle, issue slots {issue:.0f}% busy; top stall {reason} "
        f"({share:.0%} of stalls)",
        value=elig,
        unit="warps/cycle",
        gain_pct=head * share,
        gain_formula=f"(100 - max(busiest unit {busiest:.0f}%, issue {issue:.0f}%)) x top stall share "
        f"{share:.2f} = "
        f"{head * share:.1f}%",
        levers=STALL_LEVERS.get(reason, ("increase_ilp",)),
        evidence=[
            ("smsp__warps_eligible.avg.per_cycle_active", elig),
            ("smsp__issue_active.avg.pct_of_peak_sustained_active", issue),
            (f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio", c.stalls()[reason]),
            *([("global_loads_per_thread", lpt)] if (lpt := c.loads_per_thread()) is not None else []),
        ],
    )


RULES = (
    Rule(
        "launch_overhead",
        "Tiny grid: launch overhead dominates",
        ("gpu__time_duration.sum", "launch__waves_per_multiprocessor", "launch__grid_size"),
        f"{BPG}#thread-and-block-heuristics; CUDA Graphs: https://docs.nvidia.com/cuda/cuda-c-programming-guide/"
        "index.html#cuda-graphs",
        check_launch_overhead,
    ),
    Rule(
        "few_waves",
        "Grid below half a wave: too few warps",
        ("launch__waves_per_multiprocessor", "launch__grid_size", "gpu__time_duration.sum"),
        f"{NCU_GUIDE} (Launch Statistics: waves per SM); {BPG}#thread-and-block-heuristics",
        check_few_waves,
    ),
    Rule(
        "tail_effect",
        "Tail effect: the last partial wave leaves SMs idle",
        ("launch__waves_per_multiprocessor", "launch__grid_size"),
        f"{NCU_GUIDE} (Launch Statistics: waves per SM, partial last wave)",
        check_tail,
    ),
    Rule(
        "occupancy_limiter",
        "Occupancy limited by registers / shared memory / block size",
        (
            "sm__maximum_warps_per_active_cycle_pct",
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            *_LIMITS.values(),
        ),
        f"{BPG}#occupancy; {NCU_GUIDE} (Occupancy section)",
        check_occupancy,
    ),
    Rule(
        "low_eligible_warps",
        "Few eligible warps: latency not hidden (stall mix)",
        (
            "smsp__warps_eligible.avg.per_cycle_active",
            "smsp__issue_active.avg.pct_of_peak_sustained_active",
            "smsp__average_warps_issue_stalled_*_per_issue_active.ratio",
        ),
        f"{NCU_GUIDE} (Warp State Statistics: stall reasons)",
        check_eligible,
    ),
)
