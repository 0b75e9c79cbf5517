"""Benign: one preallocated output per shape, written by torch.mm(out=) and returned on every call (the
caller reads it before the next call, as every CUDA-graph or buffer-reusing runtime expects)."""

import torch

_bufs = {}


def gemm(a, b):
    key = (a.shape[0], b.shape[1], a.dtype, a.device)
    buf = _bufs.get(key)
    if buf is None:
        buf = _bufs[key] = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    return torch.mm(a, b, out=buf)
