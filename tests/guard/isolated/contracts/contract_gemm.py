"""Contract of the isolated red-team corpus: out = a @ b (torch, CPU, fp32; `reduction: "k"`).

~0.5 ms a call on one core at 384^3; the second shape (200 x 129 x 333) is no tile multiple.
Also the module of `gemm_tol.json`, the same op under a tolerance override.
"""

import torch

DT = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape["m"], shape["k"], generator=g).to(DT[dtype])
    b = torch.randn(shape["k"], shape["n"], generator=g).to(DT[dtype])
    return [a.to(device), b.to(device)]


def reference(a, b):
    return torch.matmul(a, b)
