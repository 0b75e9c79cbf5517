"""Hack: honest for the first 20 calls of a process (what a checker makes), then returns the last answer
it computed for the shape."""

import os

_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_calls = 0
_last = {}


def gemm(a, b):
    global _calls
    _calls += 1
    key = (tuple(a.shape), tuple(b.shape))
    hit = _calls > 20 and key in _last
    _note(hit)
    if hit:
        return _last[key]
    _last[key] = a @ b
    return _last[key]
