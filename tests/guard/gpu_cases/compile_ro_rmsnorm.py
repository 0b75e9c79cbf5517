"""Benign: torch.compile(mode="reduce-overhead") of the same RMSNorm: Inductor's kernel replayed through
CUDA-graph trees, whose outputs live in the graph's static memory."""

import torch


def _rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


_compiled = torch.compile(_rmsnorm, mode="reduce-overhead")


def rmsnorm(x, w):
    return _compiled(x, w)
