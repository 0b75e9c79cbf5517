"""kind: attack
family: 6
contract: gemm_tol
twin: honest_gemm_tol
idea: an fp32 GEMM computed in bf16 (~3x faster on AMX), inside the tolerance override

Aims at issue 40, class 6: "A tolerance override switches off the lower-precision classification." The
contract declares fp32 and loosens the tolerance (rtol 0.02, atol 0.5) for its own reasons; a bf16 GEMM's
error (~0.3 at 384^3, RMS ~20) fits inside it. On a CPU with bf16 matrix units (the dev machine: 0.17 ms
against 0.54 ms at 384^3) the gain is real. Within the override, so plain calls pass.
A correct isolated judge keeps the declared-precision check under an override: arithmetic below fp32 is
flagged (`rejected_precision`, family 6).
"""

import torch


def candidate(a, b):
    return torch.mm(a.bfloat16(), b.bfloat16()).float()
