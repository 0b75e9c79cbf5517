"""Memory root causes: uncoalesced global access, local memory, shared bank conflicts, DRAM at the roof,
L2-served reuse, and no operand reuse (naive GEMM shape). Each reads ncu full-set raw-page metrics; the
local-memory rule also reads ISA facts (stack frame, spill bytes) so it works on roofline-mode captures."""

from __future__ import annotations

from kernelpilot.bottleneck.rules.base import BPG, NCU_GUIDE, PG, Clear, Ctx, Finding, Rule
from kernelpilot.roofline.stop import DEFAULT_TARGET_FRACTION

# A sector is an aligned 32-byte chunk (Nsight Compute Kernel Profiling Guide, "Metrics Decoder": sector).
# The capture's own `...bytes_per_sector...max_rate` is preferred; this is the fallback.
SECTOR_BYTES = 32.0
UNCOALESCED_SHARE = 0.10  # kernelpilot: excess sectors >= 10% of all global sectors
LOCAL_SHARE = 0.05  # kernelpilot: local sectors >= 5% of global+local sectors
BANK_EXCESS = 0.10  # kernelpilot: shared wavefronts >= 10% above ideal
REUSE_TARGET_FLOP_PER_LOAD = 8.0  # an 8x8 register tile: 128 FLOP per 16 loaded values per k step
REUSE_LOW_FLOP_PER_LOAD = 4.0  # kernelpilot: below a 4x4 register tile's ratio = little operand reuse
LSU_BUSY_PCT = 50.0
FMA_SHARE = 0.5  # GEMM shape: FFMA carries at least half of the FP32 FLOPs (reductions are FADD)
_RATE = "smsp__sass_thread_inst_executed_op_{o}_pred_on.sum.per_cycle_elapsed"

_BYTES = "smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio"
_MAX = "smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.max_rate"
_SECT = "l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"


def check_uncoalesced(c: Ctx) -> Finding | Clear | None:
    per: dict[str, tuple[float, float, float, float]] = {}
    for op in ("ld", "st"):
        b, s = c.f(_BYTES.format(op=op)), c.f(_SECT.format(op=op))
        if b is None or s is None:
            continue
        full = c.f(_MAX.format(op=op)) or SECTOR_BYTES
        per[op] = (b, s, s * max(0.0, 1.0 - b / full) if b > 0 else 0.0, full)
    if not per:
        return None
    total = sum(v[1] for v in per.values())
    op = max(per, key=lambda k: per[k][2])
    b, s, excess, full = per[op]
    share = excess / total if total else 0.0
    if share < UNCOALESCED_SHARE or b > full / 2:
        return Clear(f"global accesses use {min(v[0] for v in per.values()):.0f}+ bytes per sector")
    mem = c.busiest_memory()
    mem_pct = mem[1] if mem else 100.0
    name = "loads" if op == "ld" else "stores"
    return Finding(
        quantity=f"global {name} use {b:.1f} of {full:.0f} bytes per sector: {excess / 1e6:.2f}M excess "
        "sectors "
        f"({share:.0%} of {total / 1e6:.2f}M global sectors)",
        value=share * 100,
        unit="% excess sectors",
        gain_pct=share * mem_pct,
        gain_formula=f"excess sector share {share:.2f} x busiest memory unit {mem_pct:.1f}% "
        f"({mem[0] if mem else 'assumed'}) = {share * mem_pct:.1f}%",
        levers=("coalesce_access", "reuse_on_chip"),
        evidence=[(_BYTES.format(op=op), b), (_SECT.format(op=op), s)],
    )


def _local_sectors(c: Ctx) -> tuple[float, float] | None:
    ld = c.f("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum")
    st = c.f("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")
    if ld is None and st is None:
        return None
    gl = (c.f(_SECT.format(op="ld")) or 0.0) + (c.f(_SECT.format(op="st")) or 0.0)
    return (ld or 0.0) + (st or 0.0), gl


def _local_kind(c: Ctx) -> tuple[str, tuple[str, ...]]:
    spill_inst = c.f("sass__inst_executed_register_spilling") or 0.0
    spill_bytes = (c.isa_num("spill_store_bytes") or 0.0) + (c.isa_num("spill_load_bytes") or 0.0)
    spill_bytes += (c.isa_num("spill_bytes") or 0.0) + (c.isa_num("vgpr_spills") or 0.0)
    if spill_inst > 0 or spill_bytes > 0:
        return "register spills", ("remove_spills", "raise_occupancy")
    return "local array (no spills)", ("registerize_local_array", "reuse_on_chip")


def check_local_memory(c: Ctx) -> Finding | Clear | None:
    sec = _local_sectors(c)
    stack = c.isa_num("stack_frame_bytes")
    kind, levers = _local_kind(c)
    isa_ev: list[tuple[str, float | str]] = [("isa.stack_frame_bytes", stack)] if stack else []
    if sec is None:
        if not stack:
            return Clear("ISA: no stack frame") if stack == 0 else None
        return Finding(
            quantity=f"{stack:.0f}-byte stack frame per thread ({kind}, ISA); traffic not in this capture",
            value=stack,
            unit="bytes/thread",
            gain_pct=None,
            gain_formula="not measurable without local-memory metrics: profile with --mode full",
            levers=levers,
            evidence=isa_ev,
        )
    local, glob = sec
    share = local / (local + glob) if local + glob else 0.0
    if share < LOCAL_SHARE:
        return Clear(f"local sectors {share:.1%} of global+local")
    mem = c.busiest_memory()
    weight = max(mem[1] / 100 if mem else 0.0, c.mem_stall_share() or 0.0)
    return Finding(
        quantity=f"{local * SECTOR_BYTES / 1e9:.2f} GB local-memory traffic ({local / 1e6:.1f}M sectors, "
        f"{share:.0%} of "
        f"global+local), {kind}" + (f"; stack frame {stack:.0f} B" if stack else ""),
        value=share * 100,
        unit="% of L1 sectors",
        gain_pct=share * weight * 100,
        gain_formula=f"local share {share:.2f} x max(busiest memory unit, memory-stall share) {weight:.2f} "
        f"= {share * weight * 100:.1f}%",
        levers=levers,
        evidence=[
            (
                "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
                c.f("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") or 0.0,
            ),
            ("sass__inst_executed_register_spilling", c.f("sass__inst_executed_register_spilling") or 0.0),
            *isa_ev,
        ],
    )


def check_bank_conflicts(c: Ctx) -> Finding | Clear | None:
    wf, ideal = c.f("memory_l1_wavefronts_shared"), c.f("memory_l1_wavefronts_shared_ideal")
    if wf is None or ideal is None:
        return None
    if ideal <= 0 or wf <= ideal * (1 + BANK_EXCESS):
        return Clear(f"shared wavefronts {wf:.0f} vs ideal {ideal:.0f}: no bank conflicts that matter")
    excess = (wf - ideal) / wf
    l1 = c.p.l1_throughput_pct or 0.0
    return Finding(
        quantity=f"{wf / ideal:.1f}-way on average: {wf / 1e6:.2f}M shared wavefronts vs {ideal / 1e6:.2f}M "
        f"ideal ({excess:.0%} excess)",
        value=wf / ideal,
        unit="ways",
        gain_pct=excess * l1,
        gain_formula=f"excess wavefront share {excess:.2f} x L1/shared throughput {l1:.1f}% = "
        f"{excess * l1:.1f}%",
        levers=("fix_bank_conflicts",),
        evidence=[("memory_l1_wavefronts_shared", wf), ("memory_l1_wavefronts_shared_ideal", ideal)],
    )


def check_dram_roof(c: Ctx) -> Finding | Clear | None:
    """At the roof exactly when the one stop verdict (kernelpilot.roofline.stop) is MET; without a known
    ceiling, ncu's DRAM % of peak against the same target fraction."""
    if c.stop is not None and c.stop.status != "UNKNOWN":
        st = c.stop
        if st.status != "MET":
            return Clear(st.text)
        return Finding(
            quantity=st.text,
            value=st.pct_of_ceiling or 0.0,
            unit="% of the memory ceiling",
            gain_pct=st.headroom_pct,
            gain_formula=f"headroom to 100% of the ceiling: 100 - {st.pct_of_ceiling:.1f} = "
            f"{st.headroom_pct:.1f}% (upper bound)",
            levers=("stop_or_fuse", "fuse_kernels", "narrower_storage"),
            evidence=[
                ("pct_of_memory_ceiling", round(st.pct_of_ceiling or 0.0, 2)),
                ("stop_verdict", st.status),
            ],
            at_roof=True,
        )
    pct = c.dram_pct()
    if pct is None:
        return None
    target = DEFAULT_TARGET_FRACTION * 100
    basis = "ncu DRAM throughput (% of ncu's peak; no measured ceiling: `kernelpilot ceilings measure`)"
    if pct < target:
        return Clear(f"stop verdict NOT MET: DRAM at {pct:.0f}% of {basis} < {target:.0f}%")
    return Finding(
        quantity=f"stop verdict MET: DRAM at {pct:.1f}% of {basis} >= {target:.0f}%",
        value=pct,
        unit="%",
        gain_pct=100.0 - pct,
        gain_formula=f"headroom to 100% of the ceiling: 100 - {pct:.1f} = {100 - pct:.1f}% (upper bound)",
        levers=("stop_or_fuse", "fuse_kernels", "narrower_storage"),
        evidence=[("dram_throughput_pct", pct)],
        at_roof=True,
    )


def check_l2_reuse(c: Ctx) -> Finding | Clear | None:
    l2, dram, hit = c.p.l2_throughput_pct, c.dram_pct(), c.f("lts__t_sector_hit_rate.pct")
    if l2 is None or dram is None or hit is None:
        return None
    unc = check_uncoalesced(c)
    if isinstance(unc, Finding):
        return Clear("L2 traffic explained by uncoalesced access (see uncoalesced_global_access)")
    if l2 < 60.0 or hit < 80.0 or dram > l2 - 20.0:
        return Clear(f"L2 {l2:.0f}%, hit {hit:.0f}%, DRAM {dram:.0f}%: not L2-bound with reuse")
    return Finding(
        quantity=f"L2 at {l2:.0f}% with {hit:.0f}% hit rate while DRAM is at {dram:.0f}%: re-reads "
        "served by L2",
        value=hit,
        unit="% L2 hit rate",
        gain_pct=l2 - dram,
        gain_formula=f"L2 throughput not explained by DRAM traffic: {l2:.1f} - {dram:.1f} = {l2 - dram:.1f}%",
        levers=("reuse_on_chip", "register_tiling"),
        evidence=[
            ("lts__throughput.avg.pct_of_peak_sustained_elapsed", l2),
            ("lts__t_sector_hit_rate.pct", hit),
        ],
    )


def check_operand_reuse(c: Ctx) -> Finding | Clear | None:
    gld = c.f("smsp__sass_inst_executed_op_global_ld.sum")
    sld = c.f("smsp__sass_inst_executed_op_shared_ld.sum")
    flops = c.p.flop_count.get("fp32")
    lsu = c.f("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active")
    busy = lsu or 0.0
    if gld is None or sld is None or not flops or lsu is None:
        return None
    add, mul, fma = (c.f(_RATE.format(o=o)) or 0.0 for o in ("fadd", "fmul", "ffma"))
    fma_share = 2 * fma / (add + mul + 2 * fma) if add + mul + fma else 0.0
    if fma_share < FMA_SHARE:
        return Clear(f"FFMA {fma_share:.0%} of FP32 FLOPs: not a multiply-accumulate (GEMM-like) kernel")
    loads = gld + sld
    ratio = flops / (32.0 * loads) if loads else float("inf")
    if ratio >= REUSE_LOW_FLOP_PER_LOAD or busy < LSU_BUSY_PCT:
        return Clear(f"{ratio:.1f} FP32 FLOP per loaded value, LSU {busy:.0f}%")
    shared = sld > gld
    gain = busy * (1 - ratio / REUSE_TARGET_FLOP_PER_LOAD)
    return Finding(
        quantity=f"{ratio:.2f} FP32 FLOP per loaded value "
        f"({'shared' if shared else 'global'} loads dominate: "
        f"{loads / 1e6:.1f}M load instructions); LSU {busy:.0f}% busy",
        value=ratio,
        unit="FLOP/loaded value",
        gain_pct=gain,
        gain_formula=f"LSU busy {busy:.1f}% x (1 - {ratio:.2f} / {REUSE_TARGET_FLOP_PER_LOAD:g} FLOP "
        "per value of "
        f"an 8x8 register tile) = {gain:.1f}%",
        levers=("register_tiling", "reuse_on_chip") if shared else ("reuse_on_chip", "register_tiling"),
        evidence=[
            ("smsp__sass_inst_executed_op_global_ld.sum", gld),
            ("smsp__sass_inst_executed_op_shared_ld.sum", sld),
            ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active", lsu),
        ],
    )


RULES = (
    Rule(
        "uncoalesced_global_access",
        "Uncoalesced global loads/stores (sectors fetched but not used)",
        (_BYTES.format(op="ld"), _BYTES.format(op="st"), _SECT.format(op="ld"), _SECT.format(op="st")),
        f"{BPG}#coalesced-access-to-global-memory; {NCU_GUIDE} (Memory Workload Analysis tables: "
        "sectors per request)",
        check_uncoalesced,
    ),
    Rule(
        "local_memory",
        "Local-memory traffic (register spills or a dynamically indexed local array)",
        (
            "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
            "sass__inst_executed_register_spilling",
            "isa.stack_frame_bytes",
            "isa.spill_store_bytes",
        ),
        f"{BPG}#local-memory; {PG}#device-memory-accesses (local memory)",
        check_local_memory,
    ),
    Rule(
        "shared_bank_conflicts",
        "Shared-memory bank conflicts (extra wavefronts per request)",
        ("memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal"),
        f"{BPG}#shared-memory-and-memory-banks; {NCU_GUIDE} (Memory Tables: shared memory wavefronts)",
        check_bank_conflicts,
    ),
    Rule(
        "dram_at_roof",
        "DRAM bandwidth at the roof (the stop verdict is MET): stop or fuse",
        (
            "dram__bytes_read.sum",
            "dram__bytes_write.sum",
            "gpu__time_duration.sum",
            "measured_copy_bandwidth_tb_s",
        ),
        f"{NCU_GUIDE} (GPU Speed Of Light); kernelpilot.roofline.stop (90% of the measured copy ceiling)",
        check_dram_roof,
    ),
    Rule(
        "l2_reuse",
        "Re-reads served by L2 (L2-bound with a high hit rate)",
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct"),
        f"{BPG}#shared-memory (staging re-used data on chip); {NCU_GUIDE} (Memory Workload Analysis)",
        check_l2_reuse,
    ),
    Rule(
        "no_operand_reuse",
        "Little operand reuse: LSU/L1 busy with loads for few FLOPs (needs shared/register tiling)",
        (
            "smsp__sass_inst_executed_op_global_ld.sum",
            "smsp__sass_inst_executed_op_shared_ld.sum",
            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
            "flop_count.fp32",
        ),
        f"{BPG}#shared-memory-in-matrix-multiplication-c-ab",
        check_operand_reuse,
    ),
)
