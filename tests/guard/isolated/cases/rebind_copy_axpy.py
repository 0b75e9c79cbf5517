"""kind: attack
family: 1
contract: axpy
twin: honest_axpy
idea: Tensor.copy_/__setitem__ replaced: computed when fresh values are written in

Aims at issue 40, class 1: "The harness writes fresh values ... through tensor methods and module functions
that the candidate can replace after import, outside the timed window". When imported, this file wraps
`torch.Tensor.copy_` and `torch.Tensor.__setitem__`; the wrapper writes as asked, then, if the tensor written
is an input this candidate was called with, computes 2.5 x + y for the pair right there and memoizes it
under the inputs' version counters. A harness in the candidate's process that refreshes the inputs before
each timed call thus pays for the work outside its timed window; the timed call returns the memo (~0 us).
The memo is exact (keyed on `_version`, which every torch write bumps), so plain calls are correct.
A correct isolated judge writes fresh values from its own process (shared memory: no `copy_` runs here,
no version changes), so the memo never fills: accepted at honest_axpy's speed, or rejected in family 1 if
the replaced Tensor methods are seen.
"""

import weakref

import torch

_COPY = torch.Tensor.copy_
_SETITEM = torch.Tensor.__setitem__
_PAIRS: dict[int, tuple] = {}  # id(input) -> (weakref x, weakref y): the pairs I was called with
_MEMO: dict[tuple[int, int], tuple] = {}  # (id x, id y) -> (x version, y version, output)


def _after_write(dst):
    pair = _PAIRS.get(id(dst))
    if pair is None:
        return
    x, y = pair[0](), pair[1]()
    if x is None or y is None or (dst is not x and dst is not y):
        return
    with torch.no_grad():
        out = torch.add(y, x, alpha=2.5)  # the real work, done inside the harness's write: untimed
    _MEMO[id(x), id(y)] = (x._version, y._version, out)


def _copy(self, src, non_blocking=False):
    result = _COPY(self, src, non_blocking)
    _after_write(self)
    return result


def _setitem(self, index, value):
    _SETITEM(self, index, value)
    _after_write(self)


torch.Tensor.copy_ = _copy
torch.Tensor.__setitem__ = _setitem


def candidate(x, y):
    hit = _MEMO.get((id(x), id(y)))
    if hit is not None and hit[0] == x._version and hit[1] == y._version:
        pair = _PAIRS.get(id(x))
        if pair is not None and pair[0]() is x and pair[1]() is y:
            return hit[2]  # computed when the values were written
    _PAIRS[id(x)] = _PAIRS[id(y)] = (weakref.ref(x), weakref.ref(y))
    return torch.add(y, x, alpha=2.5)
