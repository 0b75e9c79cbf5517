"""The static instruction-issue floor on one GPU of every architecture the recorded code objects cover
(tests/fixtures/isa: NVIDIA sm_75 ... sm_120 cubins, AMD gfx942 / gfx1030 / gfx1100 / gfx1201 HSACOs),
each figure checked by hand arithmetic: the per-warp (per-wave) counts read off the disassembly listed in
the comments, times the warps launched, over (the cited rate x SM/CU count x cited clock). The rates and
clocks are the bundled wiki's lines (gpu-wiki-index, `## Instruction issue and pipes`); each is re-read
here so a changed line fails the test with its name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelpilot.isa.api import IsaFileRequest
from kernelpilot.isa.core import isa_mix
from kernelpilot.roofline.core import analyze
from kernelpilot.roofline.models import IssueFloor, RooflineRequest
from kernelpilot.wiki import load_wiki

ISA = Path(__file__).resolve().parents[1] / "fixtures" / "isa"
GRID, BLOCK = 4096, 256


def _floor(gpu: str, isa: Path, kernel: str) -> IssueFloor:
    r = analyze(
        RooflineRequest(gpu=gpu, bytes_moved=1e3, isa=str(isa), isa_kernel=kernel, grid=[GRID], block=[BLOCK])
    )
    (s,) = r.issue
    assert s.source == "static"
    return s


def _by(s: IssueFloor) -> dict[str, tuple[float, float, float]]:
    """pipe -> (warp instructions, rate per clock per SM/CU, time µs)."""
    return {p.pipe: (p.warp_instructions, p.rate_inst_per_clk_per_sm, p.time_us) for p in s.pipes}


def _check_wiki(gpu_id: str, **want: float) -> None:
    """The wiki lines the hand arithmetic below uses still say what the arithmetic assumes."""
    wiki = load_wiki()
    for key, value in want.items():
        assert wiki.lookup(gpu_id, key).number() == pytest.approx(value), f"{gpu_id} {key}"


# kp::scale (kernels.cu: y[i] = a * x[i] when i < n), per warp, NOP padding and the closing `BRA .L_x_0`
# self-loop left out (nvdisasm -c of each cubin):
#   sm_75:  MOV S2R S2R IMAD ISETP @P0-EXIT MOV IMAD.WIDE LDG FMUL STG EXIT             = 12; fma 3, alu 1
#   sm_80:  MOV S2R S2R IMAD ISETP @P0-EXIT HFMA2.MMA ULDC.64 IMAD.WIDE LDG FMUL STG EXIT = 13; fma 4, alu 1
#   sm_86, sm_89: MOV S2R S2R IMAD ISETP @P0-EXIT MOV ULDC.64 IMAD.WIDE LDG FMUL STG EXIT = 13; fma 3, alu 1
#   sm_90:  LDC S2R S2UR LDC IMAD ULDC ISETP @P0-EXIT LDC.64 ULDC.64 ULDC IMAD.WIDE LDG FMUL STG EXIT = 16
#   sm_100, sm_120: LDC S2R S2UR LDCU LDC IMAD ISETP @P0-EXIT LDC.64 LDCU.64 LDCU IMAD.WIDE LDG FMUL STG EXIT
#           = 16; fma 3 (IMAD, IMAD.WIDE, FMUL; HFMA2 on sm_80), alu 1 (ISETP)
# (arch, cubin, GPU of that architecture, issued, fma, alu, SMs, clock MHz, FP32 and INT32 results/clk/SM)
# and the issue floor worked out to the digit: issued x 32768 warps / (4 x SMs x MHz) µs
NVIDIA = [
    ("sm_75", "kernels.sm_75.cubin", "t4", 12, 3, 1, 40, 1582.0, 64, 64, 1.55348),
    ("sm_80", "kernels.sm_80.cubin", "a100-sxm-80gb", 13, 4, 1, 108, 1410, 64, 64, 0.69934),
    ("sm_86", "kernels.sm_86.cubin", "a10", 13, 3, 1, 72, 1692.7, 128, 64, 0.87382),
    ("sm_89", "kernels.sm_89.cubin", "rtx-4090", 13, 3, 1, 128, 2520, 128, 64, 0.33016),
    ("sm_90", "kernels.sm_90.cubin", "h100-sxm5", 16, 3, 1, 132, 1980, 128, 64, 0.50150),
    # sm_100, sm_120: INT32 add 128 results/clk/SM (the CUDA 13.x Best Practices Guide's throughput table,
    # add.s32; AND/OR/XOR and shift are 64): the alu class runs at its fastest row, 128 / 32 = 4 warp
    # instructions per clock per SM
    ("sm_100", "kernels.sm_100.cubin", "b200", 16, 3, 1, 148, 2111.5, 128, 128, 0.41943),
    ("sm_120", "kernels.sm_120.cubin", "rtx-5090", 16, 3, 1, 170, 2407, 128, 128, 0.32032),
]


@pytest.mark.needs_tool("nvdisasm")
@pytest.mark.parametrize(
    ("arch", "cubin", "gpu", "issued", "fma", "alu", "sms", "mhz", "fp32", "int32", "want_us"),
    NVIDIA,
    ids=[row[0] for row in NVIDIA],
)
def test_nvidia_static_floor_by_hand(
    arch: str,
    cubin: str,
    gpu: str,
    issued: int,
    fma: int,
    alu: int,
    sms: int,
    mhz: float,
    fp32: int,
    int32: int,
    want_us: float,
) -> None:
    _check_wiki(
        gpu,
        sm_count=sms,
        boost_clock_mhz=mhz,
        warp_schedulers_per_sm=4,
        issue_inst_per_clk_per_scheduler=1,
        fp32_results_per_clk_per_sm=fp32,
        warp_size=32,
        int32_add_results_per_clk_per_sm=int32,
    )
    s = _floor(gpu, ISA / "nvidia" / cubin, "scale")
    warps = GRID * (BLOCK // 32)  # 4096 blocks x 8 warps = 32768
    sm_clocks_per_us = sms * mhz  # SM-clocks per microsecond (clock in MHz)
    by = _by(s)
    # issue: 4 schedulers x 1 inst/clk = 4 warp instructions per clock per SM
    assert by["issue"] == pytest.approx((issued * warps, 4, issued * warps / (4 * sm_clocks_per_us)))
    # fma: FP32 results per clock / 32 lanes; alu: the fastest INT32 row (64, or 128 on sm_120) / 32
    assert by["fma"] == pytest.approx((fma * warps, fp32 / 32, fma * warps / (fp32 / 32 * sm_clocks_per_us)))
    alu_rate = int32 / 32
    assert by["alu"] == pytest.approx((alu * warps, alu_rate, alu * warps / (alu_rate * sm_clocks_per_us)))
    assert s.binding == "issue" and s.time_us == by["issue"][2]
    assert s.time_us == pytest.approx(want_us, abs=1e-5)
    assert s.sm_count == sms and s.clock_mhz == pytest.approx(mhz)
    assert s.lower_bound is None  # straight-line code: no loop, no predicated forward branch


def _need_amd(arch: str) -> None:
    """Skip, outside CI, when the llvm-objdump found cannot disassemble `arch` (Debian 12's LLVM 14 and
    gfx942/gfx11/gfx12); CI installs LLVM 19 and runs these."""
    from kernelpilot.isa.disasm import amd_target_support

    support = amd_target_support(arch)
    if not support.ok and os.environ.get("KERNELPILOT_CI") != "1":
        pytest.skip(support.reason)


@pytest.mark.needs_tool("llvm-objdump")
def test_gfx942_static_floor_on_mi300x_by_hand() -> None:
    # lds_reduce (kernels.cl: a 256-wide LDS tree reduction), per wave64 in llvm-objdump -d --mcpu=gfx942:
    # 104 lines; 26 scheduler-internal (s_waitcnt x11, s_barrier x9, s_nop padding x6) left out = 78 issued:
    # VALU 24 (v_mov x5, v_lshl_or, v_lshlrev, v_lshl_add_u64, v_cmp x8, v_add_f32 x8), SALU/SMEM 23
    # (s_load_dwordx4, s_movk, s_and_saveexec x9, s_or_b64 x8, s_mov, s_lshl_b64, s_add, s_addc),
    # LDS 19 (ds_write x9, ds_read2* x7, ds_read x3), branch 10 (s_cbranch_execz x9, s_endpgm), VMEM 2.
    _need_amd("gfx942")
    _check_wiki(
        "mi300x",
        cu_count=304,
        boost_clock_mhz=2099.6,
        issue_inst_per_clk_per_cu=5,
        valu_lanes_per_clk_per_cu=64,
        salu_inst_per_clk_per_cu=1,
        lds_inst_per_clk_per_cu=1,
        branch_inst_per_clk_per_cu=1,
        vmem_inst_per_clk_per_cu=1,
    )
    s = _floor("MI300X", ISA / "amd" / "k.gfx942.hsaco", "lds_reduce")
    waves = GRID * (BLOCK // 64)  # 4096 workgroups x 4 wave64s = 16384
    cu_clocks_per_us = 304 * 2099.6
    by = _by(s)
    assert by["issue"] == pytest.approx((78 * waves, 5, 78 * waves / (5 * cu_clocks_per_us)))
    # VALU: 64 lanes per clock per CU / wave size 64 = 1 wave instruction per clock per CU
    assert by["valu"] == pytest.approx((24 * waves, 1, 24 * waves / cu_clocks_per_us))
    assert by["salu"] == pytest.approx((23 * waves, 1, 23 * waves / cu_clocks_per_us))
    assert by["lds"] == pytest.approx((19 * waves, 1, 19 * waves / cu_clocks_per_us))
    assert by["branch"] == pytest.approx((10 * waves, 1, 10 * waves / cu_clocks_per_us))
    assert by["vmem"] == pytest.approx((2 * waves, 1, 2 * waves / cu_clocks_per_us))
    assert s.binding == "valu"
    assert s.time_us == pytest.approx(0.61606, abs=1e-5)  # 24 x 16384 / (304 x 2099.6)
    assert s.sm_count == 304
    assert s.lower_bound is not None and "9 predicated forward branch(es)" in s.lower_bound


# lds_reduce per wave32 in llvm-objdump -d --mcpu=<arch> (s_nop, s_waitcnt / s_wait_*, s_delay_alu and the
# barriers left out as scheduler-internal):
#   VALU 24: v_add_f32 x8, v_cmpx_gt x7, v_mov x3, v_cmp_eq, v_lshl_or, v_lshlrev x2, v_add_co_u32,
#   v_add_co_ci
#   LDS 19: ds_store_b32 / ds_write_b32 x9, ds_load_2addr / ds_read2 x5, ds_load / ds_read x3, stride64 x2
#   branch 10 (s_cbranch_execz x9, s_endpgm), VMEM 2 (global_load, global_store), and SALU:
#   gfx1030 22 (s_mov x8, s_or x8, s_and_saveexec x2, s_lshl_b64, s_load_dwordx4, s_add_u32, s_addc_u32)
#     = 77 issued;
#   gfx1100 24 (s_mov x9, s_or x8, s_and_saveexec x2, s_lshl_b64, s_load_b128, s_add_u32, s_addc_u32,
#     s_sendmsg) = 79 issued (its 49 s_nop, 20 s_waitcnt, 9 s_delay_alu, 9 s_barrier left out);
#   gfx1201 23 (s_mov x9, s_or x8, s_and_saveexec x2, s_lshl_b64, s_load_b128, s_add_nc_u64, s_sendmsg)
#     = 78 issued (its 40 s_nop, 20 s_wait_*, 9 s_delay_alu, 9 s_barrier_signal, 9 s_barrier_wait left out);
#   no transcendental op
# (arch, GPU of that architecture, CUs, clock MHz, issue rate (None: UNKNOWN in the wiki), VALU lanes/clk,
# SALU and issued instructions per wave)
RDNA = [
    ("gfx1030", "rx-6900-xt", 80, 2250, 8, 64, 22, 77),
    ("gfx1100", "rx-7900-xtx", 96, 2500, None, 128, 24, 79),
    ("gfx1201", "rx-9070-xt", 64, 2970, None, 128, 23, 78),
]


@pytest.mark.needs_tool("llvm-objdump")
@pytest.mark.parametrize(
    ("arch", "gpu", "cus", "mhz", "issue", "lanes", "salu", "issued"), RDNA, ids=[r[0] for r in RDNA]
)
def test_rdna_static_floor_by_hand(
    arch: str, gpu: str, cus: int, mhz: float, issue: int | None, lanes: int, salu: int, issued: int
) -> None:
    _need_amd(arch)
    # the per-wave counts the floor multiplies, as the mix reads them off the disassembly (comment above)
    (mix,) = isa_mix(IsaFileRequest(file=str(ISA / "amd" / f"k.{arch}.hsaco"), kernel="lds_reduce")).kernels
    assert mix.pipe_classes == {"salu": salu, "valu": 24, "vmem": 2, "lds": 19, "branch": 10}
    assert mix.issued_instructions == issued == salu + 24 + 2 + 19 + 10
    rates = {"issue_inst_per_clk_per_cu": issue} if issue else {}
    _check_wiki(
        gpu,
        cu_count=cus,
        boost_clock_mhz=mhz,
        valu_lanes_per_clk_per_cu=lanes,
        lds_inst_per_clk_per_cu=1,
        transcendental_lanes_per_clk_per_cu=16,
        **rates,
    )
    s = _floor(gpu, ISA / "amd" / f"k.{arch}.hsaco", "lds_reduce")
    waves = GRID * (BLOCK // 32)  # wave32 code objects: 4096 x 8 = 32768 waves
    cu_clocks_per_us = cus * mhz
    want = {
        # VALU: lanes per clock per CU / wave size 32 (64 / 32 = 2 on RDNA 2, 128 / 32 = 4 on RDNA 3/4)
        "valu": pytest.approx((24 * waves, lanes / 32, 24 * waves / (lanes / 32 * cu_clocks_per_us))),
        # LDS: one wave32 LDS instruction per clock per CU
        "lds": pytest.approx((19 * waves, 1, 19 * waves / cu_clocks_per_us)),
    }
    if issue:  # RDNA 2: 4 instructions per clock per SIMD32 x 2 SIMD32 = 8 per CU
        want["issue"] = pytest.approx((issued * waves, issue, issued * waves / (issue * cu_clocks_per_us)))
    # no transcendental op in lds_reduce: the 16-lane trans rate gives no row; SALU, VMEM, branch are UNKNOWN,
    # and so is the RDNA 3 / 4 issue width (no issue row for gfx1100, gfx1201: the wiki files say why)
    assert _by(s) == want
    assert s.binding == "lds"
    # 19 x 32768 / (80 x 2250) = 3.45884 µs; / (96 x 2500) = 2.59413 µs; / (64 x 2970) = 3.27542 µs
    want_us = {"gfx1030": 3.45884, "gfx1100": 2.59413, "gfx1201": 3.27542}[arch]
    assert s.time_us == pytest.approx(want_us, abs=1e-5)
    assert s.sm_count == cus and s.unit == "CU" and s.clock_mhz == pytest.approx(mhz)
    assert s.lower_bound is not None and "9 predicated forward branch(es)" in s.lower_bound


@pytest.mark.needs_tool("llvm-objdump")
def test_an_amd_code_object_on_an_nvidia_gpu_is_refused() -> None:
    from kernelpilot.foundation.errors import InvalidArgumentError

    _need_amd("gfx942")
    with pytest.raises(InvalidArgumentError, match="AMD code object"):
        _floor("H100", ISA / "amd" / "k.gfx942.hsaco", "lds_reduce")


@pytest.mark.needs_tool("llvm-objdump")
def test_the_amd_floors_citations_pass_the_audit(tmp_path: Path) -> None:
    """The composite citations of a CU floor (rates x CU count x clock, wave size from the code object) are
    wiki lines the citation audit can check, like the SM floor's."""
    from kernelpilot.wiki.audit import audit_paths

    _need_amd("gfx942")
    r = analyze(
        RooflineRequest(
            gpu="MI300X",
            bytes_moved=1e3,
            isa=str(ISA / "amd" / "k.gfx942.hsaco"),
            isa_kernel="lds_reduce",
            grid=[GRID],
            block=[BLOCK],
        )
    )
    assert r.bound == "issue" and r.stop.ceiling.unit == "Ginst/s"
    report = tmp_path / "stop.md"
    report.write_text("\n".join(f"- {s}" for s in r.stop_conditions) + "\n" + r.render_text())
    res = audit_paths([report], load_wiki(), history=False)
    assert res.ok and res.citations_checked >= 8, [p.reason for p in res.problems]
    assert "valu: 3.932e+05 wave inst / (1 per clk per CU x 304 CUs x 2099.6 MHz)" in r.render_text()
