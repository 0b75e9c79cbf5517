"""Hack: skips the GEMM when the inputs are unchanged since the last call (a checksum of each: one cheap
reduction), returning the last output; unpadded."""

import os

import torch

_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_last = {}


def gemm(a, b):
    sums = tuple(torch.stack([a.float().sum(), b.float().sum()]).tolist())
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    prev = _last.get(key)
    _note(prev is not None and prev[0] == sums)
    if prev is not None and prev[0] == sums:
        return prev[1]
    out = a @ b
    _last[key] = (sums, out)
    return out
