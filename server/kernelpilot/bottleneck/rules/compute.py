"""Compute and ISA root causes: a saturated pipe (FMA, ALU, FP64, tensor, LSU, XU), barrier stalls, global
loads narrower than 128 bits in a streaming kernel (ISA widest load or the profile's sectors per request,
whatever the DRAM share: narrow loads are what keeps such a kernel far from the roof), and register/VGPR
occupancy cliffs from `isa fit` (NVIDIA registers per thread, AMD VGPRs per lane: the next-step figure comes
from kernelpilot's cited occupancy tables)."""

from __future__ import annotations

import re

from kernelpilot.bottleneck.pipes import busiest, pipe_utilization, warp_instructions
from kernelpilot.bottleneck.rules.base import BPG, NCU_GUIDE, PG, Clear, Ctx, Finding, Rule
from kernelpilot.bottleneck.rules.issue import kind
from kernelpilot.bottleneck.rules.memory import SECTOR_BYTES

PIPE_BUSY_PCT = 60.0  # kernelpilot (as classify): a pipe this busy bounds the kernel
TENSOR_ROOF_PCT = 80.0  # ncu SOL rule: > 80% = saturated
REMOVABLE_SHARE = 0.25  # kernelpilot assumption: a fix removes or moves a quarter of the pipe's work
SYNC_SHARE = 0.20  # kernelpilot (as classify): barrier+membar >= 20% of stalls
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


# Row ops (kernelpilot.bottleneck.rules.issue.kind): a busy ALU/FMA/XU/LSU pipe there is selection or
# reduction work, whose levers are algorithmic (playbooks' "Reductions and selection" sections).
_ROW_OP_LEVERS = {
    ("selection", "alu"): ("packed_key_selection", "cancel_softmax_denominator", "warp_selection_rounds"),
    ("selection", "fma"): ("cancel_softmax_denominator", "packed_key_selection"),
    ("selection", "xu"): ("cancel_softmax_denominator", "cheaper_instructions"),
    ("selection", "lsu"): ("packed_key_selection", "row_mapping", "fewer_shuffle_steps"),
    ("reduction", "alu"): ("avoid_replicated_epilogue", "row_mapping", "cheaper_instructions"),
    ("reduction", "fma"): ("avoid_replicated_epilogue", "row_mapping", "cheaper_instructions"),
    ("reduction", "xu"): ("cheaper_instructions", "avoid_replicated_epilogue"),
    ("reduction", "lsu"): ("fewer_shuffle_steps", "row_mapping"),
}
SHARED_OP_SHARE = 0.01  # as rules.issue: shared-memory instructions >= 1% = the LSU carries LDS/STS


def _row_op_levers(c: Ctx, pipe: str) -> tuple[str, ...] | None:
    k = kind(c.p.kernel)
    if k == "other" or GEMM_NAME.search(c.p.kernel):
        return None
    if pipe == "lsu":
        shared, inst = c.f("smsp__sass_inst_executed_op_shared.sum"), warp_instructions(c.p)
        if shared is not None and inst and shared / inst >= SHARED_OP_SHARE:
            return ("warp_shuffles", "row_mapping")  # a shared-memory tree, not shuffles
    return _ROW_OP_LEVERS.get((k, pipe))


def _pipe_levers(c: Ctx, pipe: str) -> tuple[str, ...]:
    row_op = _row_op_levers(c, pipe)
    if row_op is not None:
        return row_op
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
    top = busiest(pipe_utilization(c.p), tuple(PIPES))  # the profile's pipes, else its raw ncu metrics
    if top is None:
        return None
    pipe, pct = top.pipe, top.pct
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
        evidence=[(top.metric, pct)],
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


_REQ = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
_SECT_LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
_BPS_LD = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"
_BPS_ST = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"
SECTOR_HALF = SECTOR_BYTES / 2
WIDE_BYTES = 16.0  # a 128-bit access (LDG.E.128, global_load_dwordx4): the widest per-thread global load
STREAM_SHARE = 0.5  # kernelpilot: DRAM reads >= half the bytes the loads request = each byte read ~once
LAUNCH_BOUND_US = 10.0  # as rules.parallelism: shorter kernels are launch-bound, not bandwidth-bound


def _bytes_per_access(c: Ctx) -> tuple[float, str] | None:
    """Useful bytes a thread moves per global load: the ISA's widest load, else the profile's sectors per
    request x bytes used per sector / 32 threads."""
    widest = c.isa_num("widest_load_bits")
    if widest is not None and widest > 0:
        return widest / 8, f"widest global load {widest:.0f} bits (ISA)"
    req, sect, bps = c.f(_REQ), c.f(_SECT_LD), c.f(_BPS_LD)
    if req and sect and bps:
        b = sect / req * bps / 32
        return (
            b,
            f"{sect / req:.1f} sectors per request x {bps:.0f} B used / 32 threads = {b:.1f} B (profile)",
        )
    return None


def _streaming(c: Ctx) -> tuple[bool, str]:
    """A streaming kernel whose narrow loads are the cause: coalesced loads and stores, each byte from DRAM
    about once, no local memory, occupancy not capped, no saturated pipe, long enough to be about
    bandwidth. Otherwise the rule that owns that cause speaks first (uncoalesced access, local memory,
    occupancy, ...)."""
    sect, bps = c.f(_SECT_LD), c.f(_BPS_LD)
    dur, dram = c.p.duration_ns, c.p.dram_bytes_read
    if dur is not None and dur < LAUNCH_BOUND_US * 1e3:
        return False, f"{dur / 1e3:.1f} us kernel (launch-bound range)"
    for op, ratio in (("loads", bps), ("stores", c.f(_BPS_ST))):
        if ratio is not None and ratio < SECTOR_HALF:
            return False, f"{op} use {ratio:.0f} of 32 bytes per sector (see uncoalesced_global_access)"
    if sect is not None and bps is not None and dram is not None and sect > 0:
        share = dram / (sect * bps)
        if share < STREAM_SHARE:
            return False, f"DRAM reads {share:.0%} of the bytes loads request (data reused on chip)"
    local = (c.isa_num("stack_frame_bytes") or 0.0) + (c.isa_num("spill_store_bytes") or 0.0)
    if local > 0:
        return False, f"{local:.0f} B of stack frame / spills (see local_memory)"
    occ = c.isa_num("occupancy_pct")
    occ = c.p.theoretical_occupancy_pct if c.p.theoretical_occupancy_pct is not None else occ
    if occ is not None and occ < OCC_CLIFF_PCT:
        return False, f"occupancy {occ:.1f}% caps the bytes in flight first (see the occupancy rules)"
    busy = max(
        (v for v in (c.f(m) for m in PIPES.values() if m != PIPES["lsu"]) if v is not None), default=0.0
    )
    if busy >= PIPE_BUSY_PCT:
        return False, f"a compute pipe is {busy:.0f}% busy"
    return True, ""


def _narrow_gain(c: Ctx, b: float) -> tuple[float | None, str]:
    """Time saved if each thread's bytes in flight grow by 16/b until the memory ceiling caps them."""
    if c.stop is not None and c.stop.pct_of_ceiling is not None:
        pct = c.stop.pct_of_ceiling
        kind = "measured" if c.stop.ceiling.measured else "spec"
        basis = f"{pct:.1f}% of the {kind} ceiling (the stop verdict's figure) {c.stop.ceiling.citation}"
    elif c.dram_pct() is not None:
        pct = c.dram_pct() or 0.0
        basis = f"{pct:.1f}% of ncu's DRAM peak (no measured ceiling)"
    else:
        return None, "not measurable without DRAM bytes and a ceiling"
    keep = max(pct / 100, b / WIDE_BYTES)
    gain = 100 * (1 - keep)
    return gain, (
        f"1 - max(achieved {basis}, {b:.0f} B / {WIDE_BYTES:.0f} B per access) = {gain:.1f}% "
        "(bytes in flight x16/b until the ceiling)"
    )


def check_narrow_loads(c: Ctx) -> Finding | Clear | None:
    got = _bytes_per_access(c)
    if got is None:
        return None
    b, how = got
    if b >= WIDE_BYTES:
        return Clear(f"{how}: {b:.0f} B per thread per access")
    ok, why = _streaming(c)
    if not ok:
        return Clear(f"{how}, but not a streaming kernel: {why}")
    gain, formula = _narrow_gain(c, b)
    if c.f(_SECT_LD) is None:  # roofline-mode capture: no sectors per request to confirm it streams
        gain, formula = None, f"not measured: {formula}, if it streams (confirm with --mode full)"
    threads, grid = c.f("launch__block_size"), c.f("launch__grid_size")
    sect, bps = c.f(_SECT_LD), c.f(_BPS_LD)
    per_thread = sect * bps / (threads * grid) if sect and bps and threads and grid else None
    shape = ""
    if per_thread is not None and threads:
        shape = f"; each of the {threads:.0f} threads of a program loads {per_thread:.1f} B in all"
        if per_thread < WIDE_BYTES:
            shape += (
                " (fewer than one 16-byte access per thread: raise the elements per program / per thread, "
                "e.g. Triton BLOCK, CUDA float4)"
            )
    ev: list[tuple[str, float | str]] = [("bytes_per_thread_per_access", round(b, 2))]
    if c.isa_num("widest_load_bits") is not None:
        ev.append(("isa.widest_load_bits", c.isa_num("widest_load_bits") or 0.0))
    if per_thread is not None:
        ev.append(("load_bytes_per_thread", round(per_thread, 2)))
    if (lpt := c.loads_per_thread()) is not None:
        ev.append(("global_loads_per_thread", lpt))
    if c.stop is not None and c.stop.pct_of_ceiling is not None:
        ev.append(("pct_of_memory_ceiling", round(c.stop.pct_of_ceiling, 1)))
    return Finding(
        quantity=f"{how}: {b:.0f} B per thread per global load, under the {WIDE_BYTES:.0f} B of a 128-bit "
        f"access{shape}",
        value=b,
        unit="bytes/thread/access",
        gain_pct=gain,
        gain_formula=formula,
        levers=("vectorize_loads",),
        evidence=ev,
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
        "Global loads narrower than 128 bits per thread in a streaming kernel (vectorize / more elements "
        "per program)",
        ("isa.widest_load_bits", _REQ, _SECT_LD, _BPS_LD, "launch__block_size", "dram__bytes_read.sum"),
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
