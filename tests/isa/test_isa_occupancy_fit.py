"""Occupancy against worked cases (each with its source) and the fit view's findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.isa.api import IsaFitRequest, IsaOccupancyRequest
from kernelpilot.isa.core import isa_fit, isa_occupancy
from kernelpilot.isa.errors import UnknownArchError
from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy import NVIDIA_TABLE, occupancy_for
from kernelpilot.isa.occupancy_amd import AMD_TABLE, amd_waves

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa"

BPG = "CUDA C++ Best Practices Guide, section 'Calculating Occupancy' (CC 7.0, 37 registers)"
OCCH = "CUDA 13.0 cuda_occupancy.h cudaOccMaxBlocksPerSMRegsLimit/SmemLimit arithmetic, worked by hand"

# (arch, registers, static smem, block, dynamic smem) -> (blocks/SM, warps/SM, limiter), source
NV_CASES = [
    (("sm_70", 37, 0, 128, 0), (12, 48, "registers"), BPG + ": 12 blocks of 128 threads, 75%"),
    (("sm_70", 37, 0, 320, 0), (4, 40, "registers"), BPG + ": four 320-thread blocks, 63%"),
    (("sm_90", 64, 0, 256, 0), (4, 32, "registers"), OCCH + ": 64*32=2048 regs/warp, 8 warps/subpartition"),
    (("sm_90", 32, 0, 256, 0), (8, 64, "warps"), OCCH + ": 16 blocks by regs, 8 by warps"),
    (
        ("sm_80", 16, 48 * 1024, 128, 0),
        (3, 12, "shared_memory"),
        OCCH + ": (48 KB + 1 KB reserved) -> 164 KB/49 KB",
    ),
    (("sm_86", 16, 0, 128, 32 * 1024), (3, 12, "shared_memory"), OCCH + ": 100 KB / (32 KB + 1 KB)"),
    (("sm_75", 16, 0, 1024, 0), (1, 32, "warps"), OCCH + ": 32 warps/SM on CC 7.5"),
    (("sm_89", 16, 0, 32, 0), (24, 24, "blocks"), OCCH + ": 24 blocks/SM on CC 8.9"),
    (
        ("sm_120", 255, 0, 64, 0),
        (4, 8, "registers"),
        OCCH + ": 255 regs -> 8192/warp, 2 warps/subpartition x4",
    ),
    (("sm_100", 40, 0, 96, 0), (16, 48, "registers"), OCCH + ": 40*32=1280 regs/warp -> 12/subpartition"),
]


@pytest.mark.parametrize(("args", "expected", "source"), NV_CASES)
def test_nvidia_worked_cases(
    args: tuple[str, int, int, int, int], expected: tuple[int, int, str], source: str
) -> None:
    arch, regs, smem, block, dyn = args
    k = KernelResources(
        name="k",
        demangled="k",
        vendor="nvidia",
        arch=arch,
        entry="x",
        registers=regs,
        static_shared_bytes=smem,
    )
    o = occupancy_for(k, None, block, dyn)
    assert (o.resident_blocks, o.resident_warps, o.limiter) == expected, source
    assert o.sources and "cuda_occupancy.h" in o.sources[0]


AMD_CASES = [
    # (target, vgprs, wave, block) -> waves/SIMD; source: LLVM AMDGPUBaseInfo getNumWavesPerEUWithNumVGPRs
    (("gfx90a", 128, 64, 256), 4, "512 unified VGPRs / 128"),
    (("gfx942", 129, 64, 256), 3, "512 / alignTo(129, 8)=136 -> 3"),
    (("gfx942", 64, 64, 256), 8, "512 / 64 = 8 = max waves/SIMD"),
    (("gfx1100", 96, 32, 256), 16, "1536 / 96 = 16"),
    (("gfx1100", 100, 32, 256), 12, "1536 / alignTo(100, 24)=120 -> 12"),
    (("gfx1030", 100, 32, 256), 9, "1024 / alignTo(100, 16)=112 -> 9"),
    (("gfx1030", 65, 32, 256), 12, "1024 / alignTo(65, 16)=80 -> 12 (granule 16 on gfx10.3, not 8)"),
    (("gfx1010", 65, 32, 256), 14, "1024 / alignTo(65, 8)=72 -> 14"),
    (("gfx1010", 40, 32, 256), 20, "1024 / 40 = 25, capped at 20 waves/SIMD on gfx10.1"),
    (("gfx1102", 97, 32, 256), 9, "no 1.5x VGPRs: 1024 / alignTo(97, 16)=112 -> 9"),
]


@pytest.mark.parametrize(("args", "waves", "why"), AMD_CASES)
def test_amd_worked_cases(args: tuple[str, int, int, int], waves: int, why: str) -> None:
    target, vgprs, wave, block = args
    k = KernelResources(
        name="k",
        demangled="k",
        vendor="amd",
        arch=target,
        entry="x",
        registers=vgprs,
        sgprs=16,
        wavefront_size=wave,
        static_shared_bytes=0,
    )
    o = occupancy_for(k, None, block, 0)
    assert amd_waves(AMD_TABLE[target], k, wave)["vgprs"] == waves, why
    assert o.waves_per_simd == waves, why


def test_tables_cover_required_archs() -> None:
    assert set(NVIDIA_TABLE) >= {"7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"}
    assert set(AMD_TABLE) >= {
        *("gfx90a", "gfx942", "gfx950", "gfx1010", "gfx1030", "gfx1100", "gfx1101", "gfx1102"),
        *("gfx1151", "gfx1200", "gfx1201"),
    }
    for row in [*NVIDIA_TABLE.values(), *AMD_TABLE.values()]:
        assert row.source  # every row cites its source


def test_next_step_advice_registers() -> None:
    k = KernelResources(
        name="k", demangled="k", vendor="nvidia", arch="sm_90", entry="x", registers=72, static_shared_bytes=0
    )
    o = occupancy_for(k, None, 256, 0)
    assert (o.resident_blocks, o.limiter) == (3, "registers")
    assert (
        o.next_step[0].change == "shed 8 registers/thread (72 -> 64)"
        and o.next_step[0].gives == "4 blocks/SM"
    )


def test_unknown_arch_is_typed() -> None:
    with pytest.raises(UnknownArchError):
        isa_occupancy(
            IsaOccupancyRequest(file=str(FX / "nvidia" / "kernels.sm_90.cubin"), target_arch="sm_99")
        )
    with pytest.raises(UnknownArchError):
        isa_occupancy(
            IsaOccupancyRequest(file=str(FX / "nvidia" / "kernels.sm_90.cubin"), target_arch="banana")
        )


def test_occupancy_cli_target_arch(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli(
        "isa",
        "occupancy",
        str(FX / "nvidia" / "kernels.sm_80.cubin"),
        "-k",
        "local_array",
        "--block-size",
        "256",
        "--target-arch",
        "sm_86",
    )
    assert r.code == 0, r.err
    assert "on sm_86" in r.out and "not a measured" in r.out


def test_fit_names_spills_and_scalar_loads_without_disassembler() -> None:
    fit = isa_fit(
        IsaFitRequest(
            file=str(FX / "nvidia" / "kernels.sm_90.cubin"), kernel="spill_heavy", disassemble=False
        )
    )
    (rep,) = fit.reports
    assert any("likely spills: register cap 32" in x for x in rep.left_on_table)
    assert "not a measured occupancy" in rep.text


def test_fit_with_ptxas_log_states_spill_bytes() -> None:
    fit = isa_fit(
        IsaFitRequest(
            file=str(FX / "nvidia" / "kernels.sm_90.cubin"),
            kernel="spill_heavy",
            ptxas_log=str(FX / "nvidia" / "ptxas_sm_90.txt"),
            disassemble=False,
        )
    )
    assert any(x.startswith("spills: 344 bytes/thread") for x in fit.reports[0].left_on_table)


@pytest.mark.needs_tool("nvdisasm")
def test_fit_scalar_vs_vector_loads_and_matrix() -> None:
    fit = isa_fit(
        IsaFitRequest(
            file=str(FX / "nvidia" / "kernels.sm_90.cubin"), kernel="^(scalar_add|vec4_add|wmma_gemm)$"
        )
    )
    rep = {r.kernel: r for r in fit.reports}
    assert any("scalar 4-byte global loads" in x for x in rep["scalar_add"].left_on_table)
    assert not any("scalar" in x for x in rep["vec4_add"].left_on_table)
    assert rep["vec4_add"].mix is not None and rep["vec4_add"].mix.global_load_bits == {128: 2}
    assert rep["wmma_gemm"].mix is not None and rep["wmma_gemm"].mix.families["matrix"] > 0
    assert not any("matrix units idle" in x for x in rep["wmma_gemm"].left_on_table)


@pytest.mark.needs_tool("nvdisasm")
def test_mix_families_sass(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("isa", "mix", str(FX / "nvidia" / "kernels.sm_80.cubin"), "-k", "smem_reduce", "--json")
    assert r.code == 0, r.err
    import json

    (m,) = json.loads(r.out)["kernels"]
    assert m["families"]["barrier"] >= 1 and m["families"]["shared"] >= 1
    assert m["top_opcodes"].get("BAR", 0) >= 1


def test_fit_amd_scratch_and_matrix_units() -> None:
    fit = isa_fit(
        IsaFitRequest(
            file=str(FX / "amd" / "k.gfx942.hsaco"), kernel="private_array|matrix_core", disassemble=False
        )
    )
    rep = {r.kernel: r for r in fit.reports}
    assert any("scratch: 388 bytes/lane" in x for x in rep["private_array"].left_on_table)


def test_amd_mix_widths() -> None:
    from kernelpilot.isa.disasm import amd_width, family_of, sass_width

    assert amd_width("global_load_dwordx4") == 128 and amd_width("global_load_b128") == 128
    assert amd_width("global_load_dword") == 32 and amd_width("buffer_load_ubyte") == 8
    assert (
        sass_width("LDG.E.128.CONSTANT") == 128
        and sass_width("LDG.E.U16") == 16
        and sass_width("LDG.E") == 32
    )
    assert family_of("v_mfma_f32_16x16x16f16", "amd") == "matrix"
    assert family_of("v_wmma_f32_16x16x16_f16", "amd") == "matrix"
    assert family_of("HGMMA.64x128x16.F32.BF16", "nvidia") == "matrix"
    assert (
        family_of("s_waitcnt", "amd") == "wait"
        and family_of("BAR.SYNC.DEFER_BLOCKING", "nvidia") == "barrier"
    )


@pytest.mark.needs_tool("cuobjdump")
def test_mix_via_cuobjdump_when_nvdisasm_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelpilot.host import toolchain
    from kernelpilot.isa.api import IsaFileRequest
    from kernelpilot.isa.core import isa_mix

    real = toolchain.find_tool
    monkeypatch.setattr(
        toolchain, "find_tool", lambda name, env=None: None if name == "nvdisasm" else real(name)
    )
    (m,) = isa_mix(
        IsaFileRequest(file=str(FX / "nvidia" / "kernels.sm_90.cubin"), kernel="^vec4_add$")
    ).kernels
    assert m.global_load_bits == {128: 2} and m.instructions > 0
