"""`isa fit` on real AMD code objects against the compiler's own 'Occupancy [waves/SIMD]' remark, for RDNA1
(gfx1010), RDNA2, RDNA3 (gfx1101, gfx1102), RDNA3.5 (gfx1151), RDNA4 (gfx1200) and CDNA3: kernels of
different VGPR and LDS pressure, wave32 and wave64, WGP and CU mode (fixtures: tests/fixtures/isa/amd/occ,
built by its build.sh)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kernelpilot.isa.api import IsaFitRequest, IsaResourcesRequest
from kernelpilot.isa.core import isa_fit, isa_resources
from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy import occupancy_for

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa" / "amd" / "occ"
# variant -> (target, wave size, WGP mode)
VARIANTS = {
    "gfx1010": ("gfx1010", 32, True),
    "gfx1010w64": ("gfx1010", 64, True),
    "gfx1010cu": ("gfx1010", 32, False),
    "gfx1030": ("gfx1030", 32, True),
    "gfx1100w64": ("gfx1100", 64, True),
    "gfx1101": ("gfx1101", 32, True),
    "gfx1102": ("gfx1102", 32, True),
    "gfx1102w64": ("gfx1102", 64, True),
    "gfx1151": ("gfx1151", 32, True),
    "gfx1200": ("gfx1200", 32, True),
    "gfx1200w64cu": ("gfx1200", 64, False),
    "gfx942": ("gfx942", 64, None),
}
KERNELS = {
    *("vgpr_tile", "vgpr_65", "vgpr_129", "vgpr_200", "lds_24k_wg256", "lds_40k_wg256", "lds_12k_wg1024"),
    *("lds_4k_wg64", "lds_8k_default", "lds_16k_vgpr_97"),
}
REMARK = "Occupancy [waves/SIMD]"


def remarks(variant: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    cur = ""
    for line in (FX / f"remarks.{variant}.txt").read_text().splitlines():
        key, _, val = line.partition(":")
        if key.strip() == "Function Name":
            cur = val.strip()
            out[cur] = {}
        elif cur:
            out[cur][key.strip()] = val.strip()
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_fit_waves_per_simd_equal_llvm_remark(variant: str) -> None:
    target, wave, wgp = VARIANTS[variant]
    exp = remarks(variant)
    fit = isa_fit(IsaFitRequest(file=str(FX / f"occ.{variant}.hsaco"), disassemble=False))
    assert {r.kernel for r in fit.reports} == set(exp) == KERNELS
    for r in fit.reports:
        want = int(exp[r.kernel][REMARK])
        assert r.occupancy is not None and r.occupancy.waves_per_simd == want, (variant, r.kernel)
        assert f"{want} waves/SIMD" in r.text
        assert r.arch == target
    (k,) = isa_resources(
        IsaResourcesRequest(file=str(FX / f"occ.{variant}.hsaco"), kernel="^vgpr_65$")
    ).kernels
    assert (k.wavefront_size, k.workgroup_processor_mode) == (wave, wgp)


def test_fixtures_exercise_every_limiter() -> None:
    """The set catches a wrong VGPR granule, a wrong wave cap and a wrong LDS rule: each binds somewhere."""
    r = {v: {k: int(e[REMARK]) for k, e in remarks(v).items()} for v in VARIANTS}
    assert r["gfx1010"]["lds_8k_default"] == 20  # RDNA1's 20-wave cap (16 on gfx10.3+)
    assert r["gfx1030"]["lds_8k_default"] == 16
    assert (r["gfx1010"]["vgpr_65"], r["gfx1030"]["vgpr_65"]) == (14, 12)  # granule 8 vs 16
    assert (r["gfx1102"]["vgpr_129"], r["gfx1101"]["vgpr_129"]) == (7, 10)  # 1024 vs 1536 VGPRs
    assert (r["gfx1010"]["lds_24k_wg256"], r["gfx1010cu"]["lds_24k_wg256"]) == (10, 8)  # WGP vs CU LDS
    assert r["gfx1010w64"]["lds_12k_wg1024"] == 20 and r["gfx1010"]["lds_12k_wg1024"] == 16  # workgroup cap


def test_fit_cli_json_gfx1010(run_cli) -> None:  # type: ignore[no-untyped-def]
    exp = remarks("gfx1010")
    res = run_cli("isa", "fit", str(FX / "occ.gfx1010.hsaco"), "--no-disassemble", "--json")
    assert res.code == 0, res.err
    got = {r["kernel"]: r["occupancy"] for r in json.loads(res.out)["reports"]}
    assert {k: o["waves_per_simd"] for k, o in got.items()} == {k: int(e[REMARK]) for k, e in exp.items()}
    assert {o["unit"] for o in got.values()} == {"WGP"}


def _amd(arch: str, **kw: object) -> KernelResources:
    return KernelResources.model_validate(
        {"name": "k", "demangled": "k", "vendor": "amd", "arch": arch, "entry": "x", **kw}
    )


def test_resident_workgroups_per_wgp_and_cu() -> None:
    k = dict(registers=32, wavefront_size=32, static_shared_bytes=40960, max_threads_per_block=256)
    wgp = occupancy_for(_amd("gfx1010", **k), None, 256, 0)
    cu = occupancy_for(_amd("gfx1010", **k, workgroup_processor_mode=False), None, 256, 0)
    # 128 KB per WGP / 40 KB -> 3 workgroups of 8 waves; 64 KB per CU -> 1
    assert (wgp.unit, wgp.resident_blocks, wgp.resident_warps, wgp.max_warps, wgp.limiter) == (
        "WGP",
        3,
        24,
        80,
        "lds",
    )
    assert (cu.unit, cu.resident_blocks, cu.resident_warps, cu.max_warps) == ("CU", 1, 8, 40)
    assert wgp.next_step[-1].change == "cut LDS 40960 -> 32768 bytes/workgroup"


def test_launch_block_other_than_flat_size_is_noted() -> None:
    k = _amd(
        "gfx1101", registers=24, wavefront_size=32, static_shared_bytes=16384, max_threads_per_block=1024
    )
    o = occupancy_for(k, None, 128, 0)
    assert o.waves_per_simd == 16 and o.resident_blocks == 8  # LDS: 128 KB / 16 KB
    assert any("max flat workgroup size 1024" in n for n in o.notes)


def test_occupancy_capability_names_every_modelled_target() -> None:
    from kernelpilot.capabilities.isa import CAPABILITIES
    from kernelpilot.isa.occupancy import NVIDIA_TABLE
    from kernelpilot.isa.occupancy_amd import AMD_TABLE

    (cap,) = [c for c in CAPABILITIES if c.tool == "isa_occupancy"]
    named = set(re.findall(r"gfx\w+|\d+\.\d", cap.description))
    assert named == set(AMD_TABLE) | set(NVIDIA_TABLE)


@pytest.mark.parametrize(("target", "granule", "rounded"), [("gfx1100", 1024, 13), ("gfx1010", 512, 14)])
def test_lds_rounds_to_the_allocation_granule_where_clang_19_does_not(
    target: str, granule: int, rounded: int
) -> None:
    """4224 B of LDS in 64-thread workgroups: clang 19 divides the WGP's 128 KB by 4224 (31 workgroups, 16
    waves/SIMD); the hardware allocates 1024-byte blocks on gfx10.3+ (5120 B: 25 workgroups -> 13 waves/SIMD)
    and 512-byte blocks on gfx10.1 (4608 B: 28 -> 14), which LLVM counts since PR #205637."""
    path = FX / f"occ_granule.{target}.hsaco"
    text = (FX / f"remarks_granule.{target}.txt").read_text()
    assert "LDS Size [bytes/block]: 4224" in text and f"{REMARK}: 16" in text
    (r,) = isa_fit(IsaFitRequest(file=str(path), disassemble=False)).reports
    assert r.occupancy is not None and r.occupancy.waves_per_simd == rounded
    (note,) = [n for n in r.occupancy.notes if "allocated in" in n]
    assert f"{granule}-byte blocks" in note and "its remark says 16" in note


def test_mach_table_names_the_target_of_each_fixture() -> None:
    """The e_flags fallback (used when the metadata names no target) on clang 19's own objects."""
    import struct

    from kernelpilot.isa.hsaco import MACH_TO_GFX

    for variant, (target, _, _) in VARIANTS.items():
        data = (FX / f"occ.{variant}.hsaco").read_bytes()
        (flags,) = struct.unpack_from("<I", data, 0x30)  # ELF64 e_flags
        assert MACH_TO_GFX[flags & 0xFF] == target, variant
