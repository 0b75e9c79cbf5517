"""Benign: the fp32-accumulating RMSNorm that prints on import and on its first call of each shape, and logs
every call at DEBUG (off by default)."""

import logging

import torch

log = logging.getLogger("rmsnorm")
print("rmsnorm candidate loaded", flush=True)
_seen = set()


def rmsnorm(x, w):
    if x.shape not in _seen:
        _seen.add(x.shape)
        print(f"rmsnorm: first call for shape {tuple(x.shape)} {x.dtype}", flush=True)
    log.debug("rmsnorm %s", tuple(x.shape))
    ms = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(ms + 1e-6)).to(x.dtype) * w
