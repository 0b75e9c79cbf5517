"""Hack: computes only the top half of the output rows and leaves the rest as allocated."""

import torch


def gemm(a, b):
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    h = a.shape[0] // 2
    torch.mm(a[:h], b, out=out[:h])
    return out
