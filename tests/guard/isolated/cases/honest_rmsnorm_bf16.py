"""kind: honest
family: -
contract: rmsnorm_bf16
twin: -
idea: RMSNorm of bf16 rows accumulated in fp32 and rounded to bf16 once

The honest twin of the bf16 contract: the statistics in fp32 (the accumulator the default tolerance
assumes), the output in the declared bf16. A correct judge accepts it.
"""

import torch

EPS = 1e-6


def candidate(x, w):
    xf = x.float()
    scale = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (xf * scale * w.float()).to(torch.bfloat16)
