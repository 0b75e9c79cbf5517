"""AMD occupancy: the LLVM AMDGPU backend's rules per target, with the cited constants table.

The rules are those the compiler applies for its `-Rpass-analysis=kernel-resource-usage` remark
"Occupancy [waves/SIMD]" (LLVM 19: AMDGPUBaseInfo.cpp getMaxWavesPerEU, getTotalNumVGPRs,
getVGPRAllocGranule, getNumWavesPerEUWithNumVGPRs, getOccupancyWithNumSGPRs, getLocalMemorySize,
getEUsPerCU, getMaxWorkGroupsPerCU; AMDGPUSubtarget.cpp getOccupancyWithLocalMemSize; the per-target
features in AMDGPU.td). `tests/isa/test_isa_occupancy_amd.py` holds the model to the remark of real code
objects for every target in the table. RDNA (gfx10+) runs in WGP mode unless the code object says CU mode
(clang `-mcumode`): a workgroup then shares a WGP of two CUs, four SIMD32s and both CUs' LDS.
A model of resident work, not a measured (achieved) occupancy.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelpilot.isa.errors import UnknownArchError
from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy_models import OccupancyModel, OccupancyStepModel

KB = 1024
BARRIERS_PER_CU = 16  # LLVM getMaxWorkGroupsPerCU: 16 workgroups of more than one wave per CU...
BARRIERS_PER_WGP = 32  # ...and 32 per WGP (gfx10+ in WGP mode)


@dataclass(frozen=True)
class AmdCU:
    target: str
    simds_per_cu: int
    max_waves_per_simd: int  # LLVM getMaxWavesPerEU
    vgprs_wave64: int  # VGPRs per lane per SIMD available to wave64 (unified VGPR+AGPR on gfx90a/gfx94x)
    vgprs_wave32: int  # 0: no wave32
    granule_wave64: int  # LLVM getVGPRAllocGranule
    granule_wave32: int
    sgpr_limited: bool  # LLVM getOccupancyWithNumSGPRs: SGPRs limit waves before gfx10 only
    lds_per_cu: int  # bytes on one CU; a WGP (RDNA, WGP mode) has two CUs' worth
    lds_per_workgroup: int
    lds_granule: int  # bytes: the hardware allocates a workgroup's LDS in these blocks
    max_workgroup_size: int
    rdna: bool  # gfx10+: WGP or CU mode
    matrix_units: str
    source: str


LLVM = (
    "LLVM 19 AMDGPU (AMDGPUBaseInfo.cpp getMaxWavesPerEU/getTotalNumVGPRs/getVGPRAllocGranule/"
    "getLocalMemorySize/getEUsPerCU/getMaxWorkGroupsPerCU; AMDGPUSubtarget.cpp getOccupancyWithLocalMemSize)"
)
CHECKED = "checked against clang 19's Occupancy remark (tests/fixtures/isa/amd/occ)"
# LDS allocation granule per workgroup. 512 B: AMDGPUUsage, COMPUTE_PGM_RSRC2 GRANULATED_LDS_SIZE,
# "GFX7-GFX11 roundup(lds-size / (128 * 4))"; 1280 B on gfx950 (same table, 320 dwords). GFX10.3, GFX11 and
# GFX12.0 encode in 512-byte units but allocate 1024-byte blocks (LLVM PRs #219495 and #224852, after Mesa's
# ac_shader_util.h; ROCm rocm-libraries PR #10078 for gfx11). LLVM rounds LDS to the granule for occupancy
# since PR #205637.
LDS_GRANULE_GFX7 = 512
LDS_GRANULE_GFX10_3 = 1024
LDS_GRANULE_GFX950 = 1280
PRODUCTS = "AMDGPUUsage processor table"


def _cdna(target: str, lds_kb: int, granule: int, matrix: str, guide: str) -> AmdCU:
    return AmdCU(
        target=target,
        simds_per_cu=4,
        max_waves_per_simd=8,
        vgprs_wave64=512,
        vgprs_wave32=0,
        granule_wave64=8,
        granule_wave32=0,
        sgpr_limited=True,
        lds_per_cu=lds_kb * KB,
        lds_per_workgroup=lds_kb * KB,
        lds_granule=granule,
        max_workgroup_size=1024,
        rdna=False,
        matrix_units=matrix,
        source=f"{guide}; {LLVM} (gfx90a insts: 512 unified VGPRs, granule 8, 8 waves/SIMD)",
    )


def _rdna(target: str, waves: int, vgprs32: int, gran32: int, matrix: str, why: str) -> AmdCU:
    return AmdCU(
        target=target,
        simds_per_cu=2,
        max_waves_per_simd=waves,
        vgprs_wave64=vgprs32 // 2,
        vgprs_wave32=vgprs32,
        granule_wave64=gran32 // 2,
        granule_wave32=gran32,
        sgpr_limited=False,
        lds_per_cu=64 * KB,
        lds_per_workgroup=64 * KB,
        lds_granule=LDS_GRANULE_GFX7 if waves == 20 else LDS_GRANULE_GFX10_3,
        max_workgroup_size=1024,
        rdna=True,
        matrix_units=matrix,
        source=f"{why}; 64 KB LDS per CU, 128 KB per WGP in WGP mode; {LLVM}; {CHECKED}",
    )


RDNA1 = "gfx10.1 (AMDGPU.td FeatureISAVersion10_1): 20 waves/SIMD, 1024 VGPRs (wave32), granule 8"
RDNA2 = "GFX10_3Insts without Feature1_5xVGPRs: 16 waves/SIMD, 1024 VGPRs (wave32), granule 16"
FULL = "Feature1_5xVGPRs: 16 waves/SIMD, 1536 VGPRs (wave32, 192 KB per SIMD32), granule 24"
AMD_TABLE: dict[str, AmdCU] = {
    "gfx90a": _cdna(
        "gfx90a",
        64,
        LDS_GRANULE_GFX7,
        "MFMA (matrix cores)",
        "AMD Instinct MI200 CDNA2 ISA guide (64 KB LDS)",
    ),
    "gfx942": _cdna(
        "gfx942",
        64,
        LDS_GRANULE_GFX7,
        "MFMA (matrix cores)",
        "AMD Instinct MI300 CDNA3 ISA guide (64 KB LDS)",
    ),
    "gfx950": _cdna(
        "gfx950",
        160,
        LDS_GRANULE_GFX950,
        "MFMA (matrix cores, FP4/FP6)",
        "AMD Instinct MI350 CDNA4 ISA guide (160 KB LDS per CU)",
    ),
    "gfx1010": _rdna(
        "gfx1010", 20, 1024, 8, "none (no WMMA)", f"RDNA1, e.g. Radeon RX 5700 XT ({PRODUCTS}); {RDNA1}"
    ),
    "gfx1030": _rdna(
        "gfx1030", 16, 1024, 16, "none (no WMMA)", f"RDNA2, e.g. Radeon RX 6900 XT ({PRODUCTS}); {RDNA2}"
    ),
    "gfx1100": _rdna(
        "gfx1100", 16, 1536, 24, "WMMA", f"RDNA3, e.g. Radeon RX 7900 XTX; AMDGPU.td 11_0_0 has {FULL}"
    ),
    "gfx1101": _rdna(
        "gfx1101", 16, 1536, 24, "WMMA", f"RDNA3, e.g. Radeon RX 7800 XT; AMDGPU.td 11_0_1 has {FULL}"
    ),
    "gfx1102": _rdna(
        "gfx1102",
        16,
        1024,
        16,
        "WMMA",
        f"RDNA3, e.g. Radeon RX 7600; AMDGPU.td 11_0_2 has no 1.5x VGPRs: {RDNA2}",
    ),
    "gfx1151": _rdna(
        "gfx1151",
        16,
        1536,
        24,
        "WMMA",
        f"RDNA3.5, e.g. Ryzen AI Max+ 395's Radeon 8060S; AMDGPU.td 11_5_1 has {FULL}",
    ),
    "gfx1200": _rdna(
        "gfx1200", 16, 1536, 24, "WMMA (RDNA4)", f"RDNA4, e.g. Radeon RX 9060 XT; AMDGPU.td 12 has {FULL}"
    ),
    "gfx1201": _rdna(
        "gfx1201", 16, 1536, 24, "WMMA (RDNA4)", f"RDNA4, e.g. Radeon RX 9070 XT; AMDGPU.td 12 has {FULL}"
    ),
}


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit if unit else x


def amd_table_row(arch: str) -> AmdCU:
    row = AMD_TABLE.get(arch.split(":")[0].lower())
    if row is None:
        raise UnknownArchError(
            f"no occupancy rules for AMD target {arch!r}", f"covered: {', '.join(AMD_TABLE)}"
        )
    return row


def vgpr_file(row: AmdCU, wave: int) -> tuple[int, int]:
    """(VGPRs per SIMD, allocation granule) for the wave size (LLVM getTotalNumVGPRs/getVGPRAllocGranule)."""
    if wave == 64 or row.vgprs_wave32 == 0:
        return row.vgprs_wave64, row.granule_wave64
    return row.vgprs_wave32, row.granule_wave32


def sgpr_waves(sgprs: int) -> int:
    """LLVM getOccupancyWithNumSGPRs for gfx8/gfx9 (800 SGPRs per SIMD, as its table of steps)."""
    for most, waves in ((80, 10), (88, 9), (100, 8)):
        if sgprs <= most:
            return waves
    return 7


def amd_waves(row: AmdCU, k: KernelResources, wave: int) -> dict[str, int]:
    """Waves per SIMD allowed by VGPRs and SGPRs (LLVM getNumWavesPerEUWithNumVGPRs and
    getOccupancyWithNumSGPRs)."""
    cap = row.max_waves_per_simd
    lim = {"waves": cap}
    vg = k.registers or 0
    total, gran = vgpr_file(row, wave)
    if vg > 0:
        lim["vgprs"] = cap if vg < gran else min(max(total // _round_up(vg, gran), 1), cap)
    if row.sgpr_limited and (k.sgprs or 0) > 0:
        lim["sgprs"] = min(cap, sgpr_waves(k.sgprs or 0))
    return lim


@dataclass(frozen=True)
class Unit:
    """What the waves of one workgroup share: a CU, or a WGP (RDNA in WGP mode)."""

    name: str
    simds: int
    lds: int
    max_workgroups: int  # workgroups of more than one wave (barrier resources)


def unit_of(row: AmdCU, k: KernelResources) -> Unit:
    """WGP mode is LLVM's default on gfx10+; the code object records it (metadata, kernel descriptor)."""
    if row.rdna and k.workgroup_processor_mode is not False:
        return Unit("WGP", 2 * row.simds_per_cu, 2 * row.lds_per_cu, BARRIERS_PER_WGP)
    return Unit("CU", row.simds_per_cu, row.lds_per_cu, BARRIERS_PER_CU)


def lds_waves(row: AmdCU, unit: Unit, lds: int, flat_wg: int, wave: int, granule: int | None = None) -> int:
    """Waves per SIMD the LDS allows (LLVM getOccupancyWithLocalMemSize). The workgroup's LDS is rounded up to
    the allocation granule (the row's unless `granule` is given) as the hardware allocates it and LLVM counts
    it since PR #205637; clang 19 does not round (`granule=1`), so its remark can be higher for a size that is
    not a multiple of the granule (`tests/isa/test_isa_occupancy_amd.py`)."""
    cap = row.max_waves_per_simd
    waves_per_wg = -(-flat_wg // wave)
    max_wgs = cap * unit.simds
    if waves_per_wg > 1:
        max_wgs = min(max_wgs // waves_per_wg, unit.max_workgroups)
    groups = unit.lds // (_round_up(lds, granule or row.lds_granule) if lds else 1)
    if groups == 0:
        return 1
    groups = min(groups, max_wgs)
    return min(-(-groups * waves_per_wg // unit.simds), cap)


def _workgroup_limits(
    row: AmdCU, unit: Unit, simd_lim: dict[str, int], waves_per_wg: int, lds: int
) -> dict[str, int]:
    """Workgroups per unit allowed by each resource, for the launch block."""
    limits = {key: (w * unit.simds) // waves_per_wg for key, w in simd_lim.items()}
    if waves_per_wg > 1:
        limits["workgroups"] = unit.max_workgroups
    if lds > row.lds_per_workgroup:
        limits["lds"] = 0
    elif lds > 0:
        limits["lds"] = unit.lds // _round_up(lds, row.lds_granule)
    return limits


def _steps(
    row: AmdCU,
    k: KernelResources,
    wave: int,
    simd_lim: dict[str, int],
    limits: dict[str, int],
    lds: tuple[int, int],
) -> list[OccupancyStepModel]:
    """What would gain the next wave per SIMD (VGPRs) or the next workgroup (LDS); `lds` is (bytes per
    workgroup, bytes per unit)."""
    steps: list[OccupancyStepModel] = []
    if "vgprs" in simd_lim and simd_lim["vgprs"] < row.max_waves_per_simd:
        total, gran = vgpr_file(row, wave)
        nxt = simd_lim["vgprs"] + 1
        budget = (total // nxt) // gran * gran
        steps.append(
            OccupancyStepModel(
                limiter="vgprs",
                change=f"use at most {budget} VGPRs (now {k.registers})",
                gives=f"{nxt} waves/SIMD",
            )
        )
    wgs = min(limits.values())
    if limits.get("lds", wgs + 1) == wgs and wgs > 0:
        need = lds[1] // (wgs + 1) // row.lds_granule * row.lds_granule
        steps.append(
            OccupancyStepModel(
                limiter="lds",
                change=f"cut LDS {lds[0]} -> {need} bytes/workgroup",
                gives=f"{wgs + 1} workgroups",
            )
        )
    return steps


def occupancy_amd(k: KernelResources, arch: str, block: int, dyn_lds: int) -> OccupancyModel:
    row = amd_table_row(arch)
    wave = k.wavefront_size or 64
    unit = unit_of(row, k)
    waves_per_wg = -(-block // wave)
    simd_lim = amd_waves(row, k, wave)
    lds = (k.static_shared_bytes or 0) + dyn_lds
    limits = _workgroup_limits(row, unit, simd_lim, waves_per_wg, lds)
    wgs = min(limits.values())
    limiter = min(limits, key=lambda key: (limits[key], key != "waves"))
    max_unit = row.max_waves_per_simd * unit.simds
    waves_unit = min(wgs * waves_per_wg, max_unit)
    # the compiler's figure: LLVM computeOccupancy for the kernel's max flat workgroup size
    flat_wg = k.max_threads_per_block or block
    compiler_waves = min(min(simd_lim.values()), lds_waves(row, unit, lds, flat_wg, wave))
    notes = [f"wave{wave}; {unit.simds} SIMDs and {unit.lds // KB} KB LDS per {unit.name}"]
    unrounded = min(min(simd_lim.values()), lds_waves(row, unit, lds, flat_wg, wave, granule=1))
    if unrounded != compiler_waves:
        notes.append(
            f"LDS is allocated in {row.lds_granule}-byte blocks, so {lds} B takes "
            f"{_round_up(lds, row.lds_granule)} B: {compiler_waves} waves/SIMD; LLVM before PR #205637 "
            f"(clang 19 among them) does not round and its remark says {unrounded}"
        )
    if flat_wg != block:
        notes.append(
            f"waves_per_simd assumes the kernel's max flat workgroup size {flat_wg}, as LLVM's remark does; "
            f"the resident counts use the launch block {block}"
        )
    return OccupancyModel(
        kernel=k.name,
        arch=row.target,
        block_size=block,
        dynamic_shared_bytes=dyn_lds,
        unit=unit.name,
        resident_blocks=wgs,
        resident_warps=waves_unit,
        max_warps=max_unit,
        occupancy_pct=round(100.0 * waves_unit / max_unit, 1),
        waves_per_simd=compiler_waves,
        limits=limits,
        limiter=limiter,
        next_step=_steps(row, k, wave, simd_lim, limits, (lds, unit.lds)),
        sources=[row.source],
        notes=notes,
    )
