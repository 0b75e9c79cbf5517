"""Occupancy model per architecture from the published allocation rules, with its cited constants table.

`occupancy_for` picks the vendor. NVIDIA (here): the rules of the CUDA occupancy calculator
(`cuda_occupancy.h`, CUDA 13.0, functions named per line) and per-SM limits from the CUDA C++ Programming
Guide, table "Technical Specifications per Compute Capability"
(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#features-and-technical-specifications).
AMD: `isa.occupancy_amd` (the LLVM AMDGPU backend's rules, which its occupancy remark applies).
This is a model of resident work, not a measured (achieved) occupancy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelpilot.isa.errors import UnknownArchError
from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy_amd import occupancy_amd
from kernelpilot.isa.occupancy_models import OccupancyModel, OccupancyStepModel

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


def occupancy_nvidia(k: KernelResources, arch: str, block: int, dyn_smem: int) -> OccupancyModel:
    row = nvidia_table_row(arch)
    regs = k.registers or 0
    smem = k.static_shared_bytes or 0
    limits, wpb = nvidia_blocks(row, regs, smem, block, dyn_smem)
    blocks = min(limits.values())
    limiter = min(limits, key=lambda key: (limits[key], key != "warps"))
    warps = blocks * wpb
    steps: list[OccupancyStepModel] = []
    target = blocks + 1
    if blocks > 0 and target * wpb <= row.max_warps_per_sm and target <= row.max_blocks_per_sm:
        # registers needed for target blocks
        if limits.get("registers", 10**9) < target:
            for r in range(regs - 1, 0, -1):
                lim, _ = nvidia_blocks(row, r, smem, block, dyn_smem)
                if lim.get("registers", 10**9) >= target:
                    steps.append(
                        OccupancyStepModel(
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
                    OccupancyStepModel(
                        limiter="shared_memory",
                        change=f"cut shared memory {cur} -> {per_block} bytes/block",
                        gives=f"{target} blocks/SM",
                    )
                )
    if limiter == "warps" and blocks > 0:
        steps.append(
            OccupancyStepModel(
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
    return OccupancyModel(
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


def occupancy_for(k: KernelResources, arch: str | None, block: int | None, dyn: int) -> OccupancyModel:
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
