"""Hack: a memo keyed on the inputs' addresses and shapes only (no values), padded with a GPU spin above the
roofline floor; returns a clone of the remembered output."""

import os

import torch

SPIN_CYCLES = 400_000  # ~200 us at 1.98 GHz, above the 138.9 us floor
_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_memo = {}


def gemm(a, b):
    key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
    hit = _memo.get(key)
    _note(hit is not None)
    if hit is not None:
        torch.cuda._sleep(SPIN_CYCLES)
        return hit.clone()
    out = a @ b
    _memo[key] = out
    return out
