"""Reference contract of the suite's RMSNorm task: y = x / sqrt(mean(x^2, row) + eps) * w, bf16 8192x4096.

Rows carry scales from 0.25 to 3.75, so a candidate that skips the normalization (or estimates the mean
from a few columns) is out of tolerance, not within it by luck of unit-variance rows."""

import torch

DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp64": torch.float64}
EPS = 1e-6


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    rows, cols = shape["rows"], shape["cols"]
    x = torch.randn(rows, cols, generator=g, device=device, dtype=torch.float32)
    scale = torch.rand(rows, 1, generator=g, device=device, dtype=torch.float32) * 3.5 + 0.25
    w = torch.rand(cols, generator=g, device=device, dtype=torch.float32) + 0.5
    return [(x * scale).to(DT[dtype]), w.to(DT[dtype])]


def reference(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w
