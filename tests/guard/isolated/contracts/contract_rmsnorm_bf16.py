"""Contract of the isolated red-team corpus: RMSNorm in bf16, out = x / sqrt(mean(x^2) + EPS) * w.

The 16-bit contract (`dtype: bf16`, `reduction: "cols"`): the declared precision is bf16, the accumulator
fp32 (docs/guard.md, "Default tolerance"). ~0.8 ms a call on one core at 512 x 1024; the second shape
(33 x 1000) is odd.
"""

import torch

DT = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape["rows"], shape["cols"], generator=g).to(DT[dtype])
    w = (1.0 + 0.1 * torch.randn(shape["cols"], generator=g)).to(DT[dtype])
    return [x.to(device), w.to(device)]


def reference(x, w):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w
