"""Benign: torch.compile (default mode) of a clean fp32-accumulating RMSNorm."""

import torch


def _rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


_compiled = torch.compile(_rmsnorm)


def rmsnorm(x, w):
    return _compiled(x, w)
