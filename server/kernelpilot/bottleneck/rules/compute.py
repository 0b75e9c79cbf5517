"""Compute and ISA root causes: a saturated pipe (FMA, ALU, FP64, tensor, LSU, XU), barrier stalls, 32-bit
global loads in a DRAM-heavy kernel (ISA widest load), and register/VGPR occupancy cliffs from `isa fit`
(NVIDIA registers per thread, AMD VGPRs per lane: the next-step figure comes from kernelpilot's cited
occupancy tables)."""

from __future__ import annotations

import re

from kernelpilot.bottleneck.rules.base import BPG, NCU_GUIDE, PG, Clear, Ctx, Finding, Rule
from kernelpilot.bottleneck.rules.memory import DRAM_ROOF_PCT

PIPE_BUSY_PCT = 60.0  # kernelpilot (as classify): a pipe this busy bounds the kernel
TENSOR_ROOF_PCT = 80.0  # ncu SOL rule: > 80% = saturated
REMOVABLE_SHARE = 0.25  # kernelpilot assumption: a fix removes or moves a quarter of the pipe's work
SYNC_SHARE = 0.20  # kernelpilot (as classify): barrier+membar >= 20% of stalls
NARROW_DRAM_PCT = 60.0
OCC_CLIFF_PCT = 50.0

PIPES = {
    "tensor": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "fma": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "fp64": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "alu": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "lsu": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "xu": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
}
GEMM_NAME = re.compile(r"gemm|matmul|mma|conv|attn|attention|dot", re.I)


def _pipe_levers(c: Ctx, pipe: str) -> tuple[str, ...]:
    gemm_like = (
        bool(GEMM_NAME.search(c.p.kernel)) or (c.f("smsp__sass_inst_executed_op_shared_ld.sum") or 0) > 0
    )
    tensor_ops = c.isa_num("tensor_ops")
    if pipe in ("fma", "fp64") and gemm_like and not tensor_ops:
        return ("tensor_cores", "lower_precision_math")
    return {
        "tensor": ("lower_precision_math",),
        "lsu": ("vectorize_loads", "register_tiling"),
        "xu": ("cheaper_instructions",),
    }.get(pipe, ("cheaper_instructions", "lower_precision_math"))


def check_pipes(c: Ctx) -> Finding | Clear | None:
    vals = {k: c.f(m) for k, m in PIPES.items()}
    known = {k: v for k, v in vals.items() if v is not None}
    if not known:
        return None
    pipe = max(known, key=lambda k: known[k])
    pct = known[pipe]
    if pct < PIPE_BUSY_PCT:
        return Clear(f"busiest pipe {pipe} {pct:.0f}%")
    roof = pipe == "tensor" and pct >= TENSOR_ROOF_PCT
    levers = ("stop_or_fuse", "lower_precision_math") if roof else _pipe_levers(c, pipe)
    gain = pct * REMOVABLE_SHARE
    return Finding(
        quantity=f"{pipe} pipe {pct:.1f}% busy" + (" (at the tensor roof)" if roof else ""),
        value=pct,
        unit="% of peak",
        gain_pct=100 - pct if roof else gain,
        gain_formula=f"headroom 100 - {pct:.1f}"
        if roof
        else f"pipe busy {pct:.1f}% x {REMOVABLE_SHARE} of its work removed or moved (assumed) = {gain:.1f}%",
        levers=levers,
        evidence=[(PIPES[pipe], pct)],
        at_roof=roof,
    )


def check_barriers(c: Ctx) -> Finding | Clear | None:
    st = c.stalls()
    total = sum(st.values())
    if not total:
        return None
    sync = st.get("barrier", 0.0) + st.get("membar", 0.0)
    share = sync / total
    if share < SYNC_SHARE:
        return Clear(f"barrier+membar {share:.0%} of stalls")
    busiest = c.busiest_unit() or 0.0
    gain = share * (100 - busiest)
    return Finding(
        quantity=f"barrier+membar stalls {share:.0%} of all stalls ({sync:.1f} warps per issued instruction)",
        value=share * 100,
        unit="% of stalls",
        gain_pct=gain,
        gain_formula=f"sync stall share {share:.2f} x (100 - busiest unit {busiest:.0f}%) = {gain:.1f}%",
        levers=("fewer_barriers", "warp_shuffles"),
        evidence=[
            ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", st.get("barrier", 0.0))
        ],
    )


def check_narrow_loads(c: Ctx) -> Finding | Clear | None:
    widest, dram = c.isa_num("widest_load_bits"), c.dram_pct()
    if widest is None or dram is None:
        return None
    if widest >= 128 or dram < NARROW_DRAM_PCT:
        return Clear(f"widest global load {widest:.0f} bits, DRAM {dram:.0f}%")
    head = max(0.0, DRAM_ROOF_PCT - dram)
    return Finding(
        quantity=f"widest global load {widest:.0f} bits (ISA) while DRAM is at {dram:.0f}%",
        value=widest,
        unit="bits",
        gain_pct=head,
        gain_formula=f"bandwidth headroom to the at-roof level: {DRAM_ROOF_PCT:g} - {dram:.1f} = {head:.1f}%",
        levers=("vectorize_loads",),
        evidence=[("isa.widest_load_bits", widest), ("dram_throughput_pct", dram)],
    )


ISA_LIMITERS = ("registers", "vgprs", "agprs", "sgprs", "shared_memory", "lds")
_NEXT_BLOCKS = re.compile(r"->\s*(\d+)\s+(?:blocks|workgroups|waves)")


def check_isa_occupancy(c: Ctx) -> Finding | Clear | None:
    lim, occ = str(c.isa.get("occupancy_limiter") or ""), c.isa_num("occupancy_pct")
    if not lim or occ is None:
        return None
    if lim not in ISA_LIMITERS or occ >= OCC_CLIFF_PCT:
        return Clear(f"ISA occupancy {occ:.0f}%, limiter {lim}")
    step = str(c.isa.get("occupancy_next_step") or "")
    m, cur = _NEXT_BLOCKS.search(step), c.isa_num("occupancy_resident_blocks")
    busiest = c.busiest_unit()
    gain: float | None = None
    formula = "not measurable without a profile (busiest unit unknown)"
    if m and cur and busiest is not None:
        frac = 1 - cur / float(m.group(1))
        gain = (100 - busiest) * frac
        formula = f"(100 - busiest unit {busiest:.0f}%) x (1 - {cur:.0f}/{m.group(1)} blocks) = {gain:.1f}%"
    return Finding(
        quantity=f"ISA occupancy {occ:.1f}% limited by {lim}; {step}",
        value=occ,
        unit="% occupancy (ISA model)",
        gain_pct=gain,
        gain_formula=formula,
        levers=("raise_occupancy", "increase_ilp"),
        evidence=[("isa.occupancy_pct", occ), ("isa.registers", c.isa_num("registers") or 0.0)],
    )


RULES = (
    Rule(
        "pipe_saturation",
        "A compute pipe is saturated (FMA / ALU / FP64 / tensor / LSU / XU)",
        tuple(PIPES.values()),
        f"{NCU_GUIDE} (Compute Workload Analysis: pipe utilization)",
        check_pipes,
    ),
    Rule(
        "barrier_stalls",
        "Warps wait at barriers",
        (
            "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
            "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
        ),
        f"{PG}#synchronization-functions; {NCU_GUIDE} (Warp State Statistics)",
        check_barriers,
    ),
    Rule(
        "narrow_global_loads",
        "32-bit global loads in a DRAM-heavy kernel (vectorize)",
        ("isa.widest_load_bits", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        f"{PG}#device-memory-accesses (size and alignment requirement)",
        check_narrow_loads,
    ),
    Rule(
        "isa_occupancy_limit",
        "Registers / VGPRs (AMD) or shared memory / LDS cap occupancy (ISA model, `isa fit`)",
        ("isa.occupancy_limiter", "isa.occupancy_pct", "isa.registers"),
        f"{BPG}#occupancy; AMD: the VGPR budgets of kernelpilot.isa.occupancy (AMD Instinct ISA guides, "
        "LLVM AMDGPUBaseInfo.cpp getTotalNumVGPRs / getMaxWavesPerEU)",
        check_isa_occupancy,
    ),
)
