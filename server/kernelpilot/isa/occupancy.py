"""Occupancy model per architecture from the published allocation rules, with its cited constants table.

NVIDIA: the rules of the CUDA occupancy calculator (`cuda_occupancy.h`, CUDA 13.0, functions named per line)
and per-SM limits from the CUDA C++ Programming Guide, table "Technical Specifications per Compute
Capability" (https://docs.nvidia.com/cuda/cuda-c-programming-guide/#features-and-technical-specifications).
AMD: register/LDS budgets from the AMD ISA reference guides and the LLVM AMDGPU backend
(AMDGPUBaseInfo.cpp: getTotalNumVGPRs, getVGPRAllocGranule, getMaxWavesPerEU, getAddressableNumSGPRs),
which the compiler's own `-Rpass-analysis=kernel-resource-usage` "Occupancy [waves/SIMD]" remark applies.
This is a model of resident work, not a measured (achieved) occupancy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from kernelpilot.isa.errors import UnknownArchError
from kernelpilot.isa.models import KernelResources

PG = "CUDA C++ Programming Guide, table 'Technical Specifications per Compute Capability'"
OCC = "CUDA 13.0 include/cuda_occupancy.h"
KB = 1024


@dataclass(frozen=True)
class NvidiaSM:
    cc: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    reg_alloc_unit: int  # registers per warp, allocation granularity
    sub_partitions: int
    smem_per_sm: int  # bytes, maximum carveout
    smem_per_block_optin: int  # bytes
    reserved_smem_per_block: int
    smem_alloc_unit: int
    warp_size: int
    max_threads_per_block: int
    matrix_units: str
    source: str


# One row per compute capability; every number's source is on the line.
NVIDIA_TABLE: dict[str, NvidiaSM] = {
    # cc: warps/SM, blocks/SM, regs/SM, regs/block, regs/thread, reg unit, subparts, smem/SM, smem/block,
    #     reserved/block, smem unit, warp, threads/block
    "7.0": NvidiaSM(
        "7.0",
        64,
        32,
        65536,
        65536,
        255,
        256,
        4,
        96 * KB,
        96 * KB,
        0,
        256,
        32,
        1024,
        "HMMA (1st-gen tensor cores)",
        f"{PG} col 7.0; {OCC} cudaOccMaxBlocksPerMultiprocessor/SMemAllocationGranularity/"
        "RegAllocationGranularity/SubPartitionsPerMultiprocessor case 7",
    ),
    "7.5": NvidiaSM(
        "7.5",
        32,
        16,
        65536,
        65536,
        255,
        256,
        4,
        64 * KB,
        64 * KB,
        0,
        256,
        32,
        1024,
        "HMMA/IMMA (2nd-gen tensor cores)",
        f"{PG} col 7.5; {OCC} case 7 (isTuring: 16 blocks)",
    ),
    "8.0": NvidiaSM(
        "8.0",
        64,
        32,
        65536,
        65536,
        255,
        256,
        4,
        164 * KB,
        163 * KB,
        1 * KB,
        128,
        32,
        1024,
        "HMMA/IMMA/DMMA (3rd-gen tensor cores)",
        f"{PG} col 8.0 (164 KB/SM, 163 KB/block, 1 KB reserved/block); {OCC} case 8 minor 0",
    ),
    "8.6": NvidiaSM(
        "8.6",
        48,
        16,
        65536,
        65536,
        255,
        256,
        4,
        100 * KB,
        99 * KB,
        1 * KB,
        128,
        32,
        1024,
        "HMMA/IMMA (3rd-gen tensor cores)",
        f"{PG} col 8.6; {OCC} case 8 (16 blocks)",
    ),
    "8.9": NvidiaSM(
        "8.9",
        48,
        24,
        65536,
        65536,
        255,
        256,
        4,
        100 * KB,
        99 * KB,
        1 * KB,
        128,
        32,
        1024,
        "HMMA/IMMA/FP8 (4th-gen tensor cores)",
        f"{PG} col 8.9; {OCC} case 8 minor 9 (24 blocks)",
    ),
    "9.0": NvidiaSM(
        "9.0",
        64,
        32,
        65536,
        65536,
        255,
        256,
        4,
        228 * KB,
        227 * KB,
        1 * KB,
        128,
        32,
        1024,
        "HGMMA/wgmma + HMMA (4th-gen tensor cores)",
        f"{PG} col 9.0; {OCC} case 9",
    ),
    "10.0": NvidiaSM(
        "10.0",
        64,
        32,
        65536,
        65536,
        255,
        256,
        4,
        228 * KB,
        227 * KB,
        1 * KB,
        128,
        32,
        1024,
        "UTCMMA/tcgen05 + HMMA (5th-gen tensor cores)",
        f"{PG} col 10.0; {OCC} case 10 minor 0",
    ),
    "12.0": NvidiaSM(
        "12.0",
        48,
        24,
        65536,
        65536,
        255,
        256,
        4,
        100 * KB,
        99 * KB,
        1 * KB,
        128,
        32,
        1024,
        "HMMA/QMMA (5th-gen tensor cores, no wgmma/tcgen05)",
        f"{PG} col 12.0; {OCC} case 12",
    ),
}


@dataclass(frozen=True)
class AmdCU:
    target: str
    simds_per_cu: int
    max_waves_per_simd: int
    vgprs_wave64: int  # VGPRs per lane per SIMD available to wave64 (unified VGPR+AGPR on gfx90a/gfx94x)
    vgprs_wave32: int
    granule_wave64: int
    granule_wave32: int
    sgprs_per_simd: int  # 0: SGPRs do not limit occupancy on this generation
    sgpr_granule: int
    lds_per_cu: int  # bytes available to workgroups on one CU (CU mode)
    lds_per_workgroup: int
    lds_granule: int
    max_workgroup_size: int
    matrix_units: str
    source: str


LLVM = "LLVM AMDGPUBaseInfo.cpp (getTotalNumVGPRs/getVGPRAllocGranule/getMaxWavesPerEU), llvm 19"
AMD_TABLE: dict[str, AmdCU] = {
    "gfx90a": AmdCU(
        "gfx90a",
        4,
        8,
        512,
        0,
        8,
        0,
        800,
        16,
        64 * KB,
        64 * KB,
        512,
        1024,
        "MFMA (matrix cores)",
        f"AMD Instinct MI200 CDNA2 ISA guide (512 unified VGPRs, 64 KB LDS); {LLVM}",
    ),
    "gfx942": AmdCU(
        "gfx942",
        4,
        8,
        512,
        0,
        8,
        0,
        800,
        16,
        64 * KB,
        64 * KB,
        512,
        1024,
        "MFMA (matrix cores)",
        f"AMD Instinct MI300 CDNA3 ISA guide (512 unified VGPRs, 64 KB LDS); {LLVM}",
    ),
    "gfx950": AmdCU(
        "gfx950",
        4,
        8,
        512,
        0,
        8,
        0,
        800,
        16,
        160 * KB,
        160 * KB,
        512,
        1024,
        "MFMA (matrix cores, FP4/FP6)",
        f"AMD Instinct MI350 CDNA4 ISA guide (160 KB LDS per CU); {LLVM}",
    ),
    "gfx1030": AmdCU(
        "gfx1030",
        2,
        16,
        512,
        1024,
        4,
        8,
        0,
        0,
        64 * KB,
        64 * KB,
        512,
        1024,
        "none (no WMMA)",
        f"AMD RDNA2 ISA guide (128 KB VGPR file per SIMD32, 64 KB LDS per CU mode); {LLVM}",
    ),
    "gfx1100": AmdCU(
        "gfx1100",
        2,
        16,
        768,
        1536,
        12,
        24,
        0,
        0,
        64 * KB,
        64 * KB,
        512,
        1024,
        "WMMA",
        f"AMD RDNA3 ISA guide (192 KB VGPR file per SIMD32, WMMA); {LLVM}",
    ),
    "gfx1201": AmdCU(
        "gfx1201",
        2,
        16,
        768,
        1536,
        12,
        24,
        0,
        0,
        64 * KB,
        64 * KB,
        512,
        1024,
        "WMMA (RDNA4)",
        f"AMD RDNA4 ISA guide (192 KB VGPR file per SIMD32, WMMA); {LLVM}",
    ),
}


class OccupancyStep(BaseModel):  # same shape as occupancy_models.OccupancyStepModel
    limiter: str
    change: str = Field(description="what would gain the next step")
    gives: str


class Occupancy(BaseModel):
    kernel: str
    arch: str
    block_size: int
    dynamic_shared_bytes: int = 0
    resident_blocks: int = Field(description="blocks (workgroups) per SM (CU)")
    resident_warps: int = Field(description="warps per SM (waves per CU on AMD)")
    max_warps: int = Field(description="architectural maximum warps per SM (waves per CU on AMD)")
    occupancy_pct: float
    waves_per_simd: int | None = Field(
        None,
        description="AMD: waves per SIMD allowed by registers/LDS (the compiler remark's figure); "
        "resident_warps is workgroup-granular",
    )
    limits: dict[str, int] = Field(description="blocks per SM allowed by each resource")
    limiter: str
    next_step: list[OccupancyStep] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def cc_of(arch: str) -> str:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)(\d)[af]?", arch.strip().lower())
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    m = re.fullmatch(r"(\d+)\.(\d)", arch.strip())
    if m:
        return f"{int(m.group(1))}.{m.group(2)}"
    raise UnknownArchError(
        f"unknown architecture {arch!r}", "give sm_XX (e.g. sm_90), a compute capability (9.0) or a gfx id"
    )


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit if unit else x


def nvidia_table_row(arch: str) -> NvidiaSM:
    cc = cc_of(arch)
    row = NVIDIA_TABLE.get(cc)
    if row is None:
        raise UnknownArchError(
            f"no occupancy rules for compute capability {cc} (arch {arch!r})",
            f"covered: {', '.join(NVIDIA_TABLE)}; pass --arch with one of them",
        )
    return row


def amd_table_row(arch: str) -> AmdCU:
    row = AMD_TABLE.get(arch.split(":")[0].lower())
    if row is None:
        raise UnknownArchError(
            f"no occupancy rules for AMD target {arch!r}", f"covered: {', '.join(AMD_TABLE)}"
        )
    return row


def nvidia_blocks(
    row: NvidiaSM, regs: int, smem_static: int, block: int, dyn_smem: int
) -> tuple[dict[str, int], int]:
    """Blocks per SM allowed by warps, blocks, registers and shared memory (cuda_occupancy.h rules)."""
    warps_per_block = -(-block // row.warp_size)
    limits: dict[str, int] = {}
    limits["warps"] = row.max_warps_per_sm // warps_per_block  # cudaOccMaxBlocksPerSMWarpsLimit
    limits["blocks"] = row.max_blocks_per_sm
    # cudaOccMaxBlocksPerSMRegsLimit: per-warp allocation rounded to the unit, per sub-partition
    if regs > 0:
        per_warp = _round_up(regs * row.warp_size, row.reg_alloc_unit)
        assumed = per_warp * _round_up(warps_per_block, row.sub_partitions)
        if regs > row.max_regs_per_thread or assumed > row.regs_per_block:
            limits["registers"] = 0
        else:
            warps = (row.regs_per_sm // row.sub_partitions // per_warp) * row.sub_partitions
            limits["registers"] = warps // warps_per_block
    # cudaOccMaxBlocksPerSMSmemLimit: static + reserved + dynamic, rounded to the allocation unit
    total = smem_static + row.reserved_smem_per_block + dyn_smem
    alloc = _round_up(total, row.smem_alloc_unit)
    if smem_static + dyn_smem > row.smem_per_block_optin:
        limits["shared_memory"] = 0
    elif alloc > 0 and smem_static + dyn_smem > 0:
        limits["shared_memory"] = row.smem_per_sm // alloc
    return limits, warps_per_block


def occupancy_nvidia(k: KernelResources, arch: str, block: int, dyn_smem: int) -> Occupancy:
    row = nvidia_table_row(arch)
    regs = k.registers or 0
    smem = k.static_shared_bytes or 0
    limits, wpb = nvidia_blocks(row, regs, smem, block, dyn_smem)
    blocks = min(limits.values())
    limiter = min(limits, key=lambda key: (limits[key], key != "warps"))
    warps = blocks * wpb
    steps: list[OccupancyStep] = []
    target = blocks + 1
    if blocks > 0 and target * wpb <= row.max_warps_per_sm and target <= row.max_blocks_per_sm:
        # registers needed for target blocks
        if limits.get("registers", 10**9) < target:
            for r in range(regs - 1, 0, -1):
                lim, _ = nvidia_blocks(row, r, smem, block, dyn_smem)
                if lim.get("registers", 10**9) >= target:
                    steps.append(
                        OccupancyStep(
                            limiter="registers",
                            change=f"shed {regs - r} registers/thread ({regs} -> {r})",
                            gives=f"{target} blocks/SM",
                        )
                    )
                    break
        if limits.get("shared_memory", 10**9) < target:
            need = row.smem_per_sm // target
            per_block = (need // row.smem_alloc_unit) * row.smem_alloc_unit - row.reserved_smem_per_block
            cur = smem + dyn_smem
            if per_block >= 0:
                steps.append(
                    OccupancyStep(
                        limiter="shared_memory",
                        change=f"cut shared memory {cur} -> {per_block} bytes/block",
                        gives=f"{target} blocks/SM",
                    )
                )
    if limiter == "warps" and blocks > 0:
        steps.append(
            OccupancyStep(
                limiter="warps",
                change="already at the warp limit of the SM",
                gives=f"{warps}/{row.max_warps_per_sm} warps",
            )
        )
    notes = []
    if block > row.max_threads_per_block:
        notes.append(f"block size {block} exceeds the {row.max_threads_per_block}-thread limit: launch fails")
    if k.max_threads_per_block and block > k.max_threads_per_block:
        notes.append(f"block size {block} exceeds the kernel's launch bound {k.max_threads_per_block}")
    return Occupancy(
        kernel=k.name,
        arch=f"sm_{row.cc.replace('.', '')}",
        block_size=block,
        dynamic_shared_bytes=dyn_smem,
        resident_blocks=blocks,
        resident_warps=warps,
        max_warps=row.max_warps_per_sm,
        occupancy_pct=round(100.0 * warps / row.max_warps_per_sm, 1),
        limits=limits,
        limiter=limiter,
        next_step=steps,
        sources=[row.source],
        notes=notes,
    )


def amd_waves(row: AmdCU, k: KernelResources, wave: int) -> dict[str, int]:
    """Waves per SIMD allowed by VGPRs and SGPRs (LLVM getMaxWavesPerEU / getNumWavesPerEUWithNumVGPRs)."""
    lim = {"waves": row.max_waves_per_simd}
    vg = k.registers or 0
    if wave == 64 or row.vgprs_wave32 == 0:
        total, gran = row.vgprs_wave64, row.granule_wave64
    else:
        total, gran = row.vgprs_wave32, row.granule_wave32
    if vg > 0:
        lim["vgprs"] = min(row.max_waves_per_simd, total // _round_up(vg, gran))
    if row.sgprs_per_simd and (k.sgprs or 0) > 0:
        lim["sgprs"] = min(
            row.max_waves_per_simd, row.sgprs_per_simd // _round_up(k.sgprs or 0, row.sgpr_granule)
        )
    return lim


def occupancy_amd(k: KernelResources, arch: str, block: int, dyn_lds: int) -> Occupancy:
    row = amd_table_row(arch)
    wave = k.wavefront_size or 64
    waves_per_wg = -(-block // wave)
    simd_lim = amd_waves(row, k, wave)
    per_simd = min(simd_lim.values())
    # workgroups per CU: waves spread over the SIMDs of the CU
    limits: dict[str, int] = {}
    for key, w in simd_lim.items():
        limits[key] = (w * row.simds_per_cu) // waves_per_wg
    lds = (k.static_shared_bytes or 0) + dyn_lds
    if lds > row.lds_per_workgroup:
        limits["lds"] = 0
    elif lds > 0:
        limits["lds"] = row.lds_per_cu // _round_up(lds, row.lds_granule)
    wgs = min(limits.values())
    # the compiler's figure: register-limited waves per SIMD, further capped by what the LDS lets in
    compiler_waves = per_simd
    if "lds" in limits:
        compiler_waves = min(compiler_waves, limits["lds"] * waves_per_wg // row.simds_per_cu)
    limiter = min(limits, key=lambda key: (limits[key], key != "waves"))
    waves_cu = min(wgs * waves_per_wg, row.max_waves_per_simd * row.simds_per_cu)
    max_cu = row.max_waves_per_simd * row.simds_per_cu
    steps: list[OccupancyStep] = []
    if "vgprs" in simd_lim and simd_lim["vgprs"] < row.max_waves_per_simd:
        total, gran = (
            (row.vgprs_wave64, row.granule_wave64)
            if wave == 64 or row.vgprs_wave32 == 0
            else (row.vgprs_wave32, row.granule_wave32)
        )
        nxt = simd_lim["vgprs"] + 1
        budget = (total // nxt) // gran * gran
        steps.append(
            OccupancyStep(
                limiter="vgprs",
                change=f"use at most {budget} VGPRs (now {k.registers})",
                gives=f"{nxt} waves/SIMD",
            )
        )
    if "lds" in limits and limits["lds"] < wgs + 1 and limiter == "lds":
        need = row.lds_per_cu // (wgs + 1) // row.lds_granule * row.lds_granule
        steps.append(
            OccupancyStep(
                limiter="lds",
                change=f"cut LDS {lds} -> {need} bytes/workgroup",
                gives=f"{wgs + 1} workgroups/CU",
            )
        )
    return Occupancy(
        kernel=k.name,
        arch=row.target,
        block_size=block,
        dynamic_shared_bytes=dyn_lds,
        resident_blocks=wgs,
        resident_warps=waves_cu,
        max_warps=max_cu,
        occupancy_pct=round(100.0 * waves_cu / max_cu, 1),
        waves_per_simd=compiler_waves,
        limits=limits,
        limiter=limiter,
        next_step=steps,
        sources=[row.source],
        notes=[f"wave{wave}; {row.simds_per_cu} SIMDs per CU"],
    )


def occupancy_for(k: KernelResources, arch: str | None, block: int | None, dyn: int) -> Occupancy:
    a = arch or k.arch
    if block is None:
        block = (
            k.required_block_size[0] * k.required_block_size[1] * k.required_block_size[2]
            if k.required_block_size
            else (k.max_threads_per_block or 256)
        )
    if a.lower().startswith("gfx"):
        return occupancy_amd(k, a, block, dyn)
    return occupancy_nvidia(k, a, block, dyn)
