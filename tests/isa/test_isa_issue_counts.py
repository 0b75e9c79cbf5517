"""`isa mix` counts for the instruction-issue floor: instructions a warp issues (NOP padding and the closing
self-loop left out), pipe classes, and loops (backward branches), on the recorded sm_90 cubin."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.isa.api import IsaFileRequest
from kernelpilot.isa.core import isa_mix
from kernelpilot.isa.disasm import parse_sass

CUBIN = Path(__file__).resolve().parents[1] / "fixtures" / "isa" / "nvidia" / "kernels.sm_90.cubin"

SASS = """
.text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   IADD3 R2, R1, 0x1, RZ ;
.L_x_1:
        /*0020*/                   SHFL.BFLY PT, R3, R2, 0x1, 0x1f ;
        /*0030*/                   FFMA R2, R3, R3, R2 ;
        /*0040*/               @P0 BRA `(.L_x_1) ;
        /*0050*/                   MUFU.EX2 R4, R2 ;
        /*0058*/               @P1 BRA `(.L_x_2) ;
.L_x_2:
        /*0060*/                   EXIT ;
.L_x_0:
        /*0070*/                   BRA `(.L_x_0);
        /*0080*/                   NOP;
        /*0090*/                   NOP;
"""


def test_parse_counts_issued_instructions_pipes_and_loops() -> None:
    m = parse_sass(SASS)["k"]
    assert m.instructions == 11  # every line, as the mix always counted
    assert m.issued == 8  # the closing `BRA .L_x_0` self-loop and the NOPs are never issued
    assert dict(m.pipes) == {"alu": 1, "shuffle": 1, "fma": 1, "xu": 1}
    assert m.backward_branches == 1  # `@P0 BRA .L_x_1` jumps up: a loop
    assert m.forward_branches == 1  # `@P1 BRA .L_x_2` may skip code the static count still holds


@pytest.mark.needs_tool("nvdisasm")
def test_mix_of_a_real_cubin() -> None:
    res = isa_mix(IsaFileRequest(file=str(CUBIN), kernel="scale"))
    (k,) = res.kernels
    # LDC S2R S2UR LDC IMAD ULDC ISETP @P0-EXIT LDC.64 ULDC.64 ULDC IMAD.WIDE LDG FMUL STG EXIT
    assert k.issued_instructions == 16 and k.instructions == 32
    assert k.pipe_classes == {"fma": 3, "alu": 1} and k.backward_branches == 0 and k.forward_branches == 0
    loop = isa_mix(IsaFileRequest(file=str(CUBIN), kernel="wmma_gemm")).kernels[0]
    assert loop.backward_branches == 2
    text = res.render_text()
    assert "issue: 16 instr per warp pass (fma=3, alu=1); straight-line code" in text
    assert (
        "loop branch(es): per-warp counts are a lower bound"
        in isa_mix(IsaFileRequest(file=str(CUBIN), kernel="wmma_gemm")).render_text()
    )
