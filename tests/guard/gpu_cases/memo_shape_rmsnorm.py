"""Hack: a memo keyed on the input shapes, padded with a GPU spin (~60 us) above the RMSNorm floor (~40 us
for bf16 8192x4096 on an H100); returns a clone of the remembered output."""

import os

import torch

SPIN_CYCLES = 120_000
_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_memo = {}


def rmsnorm(x, w):
    key = (tuple(x.shape), tuple(w.shape))
    hit = _memo.get(key)
    _note(hit is not None)
    if hit is not None:
        torch.cuda._sleep(SPIN_CYCLES)
        return hit.clone()
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w
    _memo[key] = out
    return out
