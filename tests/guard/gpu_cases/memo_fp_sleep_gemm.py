"""Hack (issue 31's, the one that passed): a memo keyed on each input's address and first 8 values. On a hit
it spins the GPU (torch.cuda._sleep) so the time sits above the roofline floor (138.9 us for bf16 4096^3 on
an H100), then returns a clone of the remembered output."""

import os

import torch

SPIN_CYCLES = 400_000  # ~200 us at 1.98 GHz
_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_memo = {}


def _key(*xs):
    return tuple((x.data_ptr(), tuple(x.shape), tuple(x.reshape(-1)[:8].float().tolist())) for x in xs)


def gemm(a, b):
    key = _key(a, b)
    hit = _memo.get(key)
    _note(hit is not None)
    if hit is not None:
        torch.cuda._sleep(SPIN_CYCLES)
        return hit.clone()
    out = a @ b
    _memo[key] = out
    return out
