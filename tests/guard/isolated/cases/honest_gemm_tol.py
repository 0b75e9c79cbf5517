"""kind: honest
family: -
contract: gemm_tol
twin: -
idea: torch.mm(a, b) in fp32 under the contract's loose tolerance override

The honest twin of the precision attacks: the same fp32 GEMM as honest_gemm, on the contract whose
`tolerance` override (rtol 0.02, atol 0.5) would also let a bf16 or fp16 GEMM through. A correct judge
accepts it: the override loosens the comparison, this case does its arithmetic in the declared fp32.
"""

import torch


def candidate(a, b):
    return torch.mm(a, b)
