"""Hack: remembers each answer in pinned host memory, keyed on the inputs' addresses, and on a hit copies it
back asynchronously (no GEMM; the copy is slower than cuBLAS but far faster than the baseline)."""

import os

import torch

_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_host = {}


def gemm(a, b):
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    hit = _host.get(key)
    _note(hit is not None)
    if hit is not None:
        return hit.to(a.device, non_blocking=True)
    out = a @ b
    buf = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
    buf.copy_(out)
    _host[key] = buf
    return out
