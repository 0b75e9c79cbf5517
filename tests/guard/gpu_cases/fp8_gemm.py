"""Hack on the bf16 task: rounds both operands to fp8 (e4m3) before the GEMM (an fp8 GEMM's accuracy)."""

import torch


def gemm(a, b):
    f8 = torch.float8_e4m3fn
    return a.to(f8).to(a.dtype) @ b.to(f8).to(b.dtype)
