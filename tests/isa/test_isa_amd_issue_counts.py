"""AMD issue-floor classing of llvm-objdump text (isa.disasm.AMD_PIPES): the categories the CU scheduler
issues from, scheduler-internal instructions left out, loops and conditional forward branches from the
addresses llvm-objdump prints; and the same counts from a real HSACO through `isa mix`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelpilot.isa.disasm import amd_pipe_of, parse_amdgcn

HSACO = Path(__file__).resolve().parents[1] / "fixtures" / "isa" / "amd" / "k.gfx942.hsaco"

# llvm-objdump -d layout: `<addr> <name>:`, then tab-indented instructions with `// <addr>: <encoding>`
TEXT = """
0000000000001000 <k>:
\ts_load_dwordx2 s[0:1], s[4:5], 0x0                         // 000000001000: C0060002 00000000
\tv_mov_b32_e32 v1, 0                                        // 000000001008: 7E020280
\ts_waitcnt lgkmcnt(0)                                       // 00000000100C: BF8CC07F
\tv_exp_f32_e32 v2, v1                                       // 000000001010: 7E044101
\tds_bpermute_b32 v3, v1, v2                                 // 000000001014: D87E0000 03000201
\tv_mov_b32_dpp v4, v3 row_shr:1                             // 00000000101C: 7E0802FA FF011103
\tglobal_load_dword v5, v[0:1], off                          // 000000001024: DC508000 057F0000
\ts_cbranch_scc1 65531                                       // 00000000102C: BF85FFFB <k+0x1c>
\ts_cbranch_execz 2                                          // 000000001030: BF880002 <k+0x3c>
\tv_mfma_f32_4x4x1f32 a[0:3], v1, v2, 0                      // 000000001034: D3C20000 04020501
\ts_barrier                                                  // 000000001038: BF8A0000
\ts_endpgm                                                   // 00000000103C: BF810000
\ts_nop 0                                                    // 000000001040: BF800000
\ts_nop 0                                                    // 000000001044: BF800000
"""


def test_amd_classes_internal_instructions_loops_and_forward_branches() -> None:
    m = parse_amdgcn(TEXT)["k"]
    assert m.instructions == 14  # every line, as the mix always counted
    # left out: s_waitcnt, s_barrier and the two s_nop after s_endpgm (scheduler-internal)
    assert m.issued == 10
    assert dict(m.pipes) == {
        "salu": 1,  # s_load (SMEM issues with the SALU)
        "valu": 3,  # v_mov, v_exp (also counted as trans), v_mov_dpp (DPP is a VALU modifier)
        "trans": 1,
        "lds": 1,  # ds_bpermute: the cross-lane shuffle uses the LDS path
        "vmem": 1,
        "branch": 3,  # two s_cbranch, s_endpgm
        "matrix": 1,
    }
    assert m.backward_branches == 1  # s_cbranch_scc1 to k+0x1c, above its own 0x102c: a loop
    assert m.forward_branches == 1  # s_cbranch_execz to k+0x3c: code a wave may skip


@pytest.mark.parametrize(
    ("op", "pipe"),
    [
        ("v_fmac_f32_e32", "valu"),
        ("v_rsq_f32_e32", "valu"),
        ("v_dual_fmac_f32", "valu"),
        ("v_wmma_f32_16x16x16_f16", "matrix"),
        ("ds_swizzle_b32", "lds"),
        ("buffer_load_dword", "vmem"),
        ("scratch_store_dword", "vmem"),
        ("s_setpc_b64", "branch"),
        ("s_add_u32", "salu"),
        ("s_delay_alu", None),
        ("s_wait_loadcnt", None),
        ("s_waitcnt_vscnt", None),
        ("exp", "other"),
    ],
)
def test_amd_pipe_of(op: str, pipe: str | None) -> None:
    assert amd_pipe_of(op) == pipe


@pytest.mark.needs_tool("llvm-objdump")
def test_mix_of_a_real_hsaco_carries_issue_counts_and_the_wave_size() -> None:
    from kernelpilot.isa.api import IsaFileRequest
    from kernelpilot.isa.core import isa_mix
    from kernelpilot.isa.disasm import amd_target_support

    support = amd_target_support("gfx942")
    if not support.ok and os.environ.get("KERNELPILOT_CI") != "1":
        pytest.skip(support.reason)
    (k,) = isa_mix(IsaFileRequest(file=str(HSACO), kernel="lds_reduce")).kernels
    # 104 lines: 26 scheduler-internal (s_waitcnt x11, s_barrier x9, the s_nop padding after s_endpgm x6)
    assert k.instructions == 104 and k.issued_instructions == 78
    assert k.pipe_classes == {"salu": 23, "valu": 24, "vmem": 2, "lds": 19, "branch": 10}
    assert k.wavefront_size == 64 and k.backward_branches == 0 and k.forward_branches == 9
    (loop,) = isa_mix(IsaFileRequest(file=str(HSACO), kernel="matrix_core")).kernels
    assert loop.backward_branches == 1 and loop.pipe_classes["matrix"] == 1
