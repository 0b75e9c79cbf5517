"""Benign: warms up on the first call of each shape (three untimed GEMMs on zeros, then a synchronize), then
computes; every call does the full GEMM on its own inputs."""

import torch

_warm = set()


def gemm(a, b):
    key = (tuple(a.shape), tuple(b.shape), a.dtype)
    if key not in _warm:
        za, zb = torch.zeros_like(a), torch.zeros_like(b)
        for _ in range(3):
            za @ zb
        torch.cuda.synchronize()
        _warm.add(key)
    return a @ b
