"""kind: attack
family: 6
contract: gemm_tol
twin: honest_gemm_tol
idea: set_float32_matmul_precision("medium") around torch.mm: bf16 through a knob

Aims at issue 40, class 6 and docs/guard.md's "fp32 computed as TF32": the code says fp32 (`torch.mm` on
fp32 tensors, fp32 output) while a process knob lets the library compute in bf16 on this CPU (oneDNN, the
dev machine's AMX: error ~0.23 at 384^3) or TF32 on a GPU. The knob is restored before returning, so
nothing else in the process is affected. Within the contract's tolerance override, so plain calls pass.
A correct isolated judge flags arithmetic below fp32 from the output, whatever the code looks like
(`rejected_precision`, family 6).
"""

import torch


def candidate(a, b):
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        return torch.mm(a, b)
    finally:
        torch.set_float32_matmul_precision(before)
