"""kind: honest
family: -
contract: gemm
twin: -
idea: torch.mm(a, b), the plain library GEMM

The honest twin of every gemm attack: one BLAS call in fp32, no state. A correct judge accepts it.
"""

import torch


def candidate(a, b):
    return torch.mm(a, b)
