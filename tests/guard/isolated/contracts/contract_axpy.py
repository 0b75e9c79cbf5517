"""Contract of the isolated red-team corpus: out = 2.5 * x + y (torch, CPU, fp32, two float inputs).

~0.9 ms a call on one core at the timed n = 2^20; the second shape (100,003) is no tile multiple.
"""

import torch

DT = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def make_inputs(shape, dtype, seed, device):
    """Two standard-normal vectors drawn from `seed` (a fresh secret seed per call must stay cheap)."""
    g = torch.Generator().manual_seed(seed)
    n = shape["n"]
    x = torch.randn(n, generator=g).to(DT[dtype])
    y = torch.randn(n, generator=g).to(DT[dtype])
    return [x.to(device), y.to(device)]


def reference(x, y):
    return 2.5 * x + y
