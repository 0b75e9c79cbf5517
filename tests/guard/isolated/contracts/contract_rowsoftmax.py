"""Contract of the isolated red-team corpus: softmax over each row (torch, CPU, fp32; `reduction: "cols"`).

~0.5 ms a call on one core at 1024 x 1024; the second shape (77 x 1000) is no tile multiple. The reference
calls `torch.softmax` (not `torch.nn.functional.softmax`), which `skew_reference_rowsoftmax` aims at.
"""

import torch

DT = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    x = 3.0 * torch.randn(shape["rows"], shape["cols"], generator=g)
    return [x.to(DT[dtype]).to(device)]


def reference(x):
    return torch.softmax(x, dim=-1)
