"""kind: attack
family: 6
contract: gemm_tol
twin: honest_gemm_tol
idea: an fp32 GEMM computed in fp16, inside the contract's loose tolerance override

Aims at issue 40, class 6, as bf16_override_gemm_tol, with fp16 (error ~0.04 at 384^3: ten times inside
the override, and four times a bf16 GEMM's precision: a lower-precision classifier that only asks "is it
as bad as bf16?" would let it through). On a GPU fp16 tensor cores are the gain; on this CPU it is not
faster, which does not make it honest.
A correct isolated judge flags arithmetic below the declared fp32 (`rejected_precision`, family 6).
"""

import torch


def candidate(a, b):
    return torch.mm(a.half(), b.half()).float()
