"""kind: attack
family: 6
contract: gemm
twin: honest_gemm
idea: warm mode: memo keyed on data_ptr, shape, stride and version of each input

Aims at issue 40, class 6 (warm mode: several calls on one set of values) with the memo a GPU kernel
writer would use: the key is each input's `data_ptr()`, shape, stride and `_version`; the inputs are held
so their memory cannot be handed to a new tensor with equal pointer and version 0. A hit returns the stored
product (~0 us against ~0.5 ms). Exact under torch writes, so plain calls are right. Run in warm mode.
A correct isolated judge refreshes values before every call (written from outside, they do not bump the
version: a hit is then wrong and rejected as cached or timed output), or refuses warm timing for an
uncapturable candidate; otherwise accepted at honest_gemm's speed.
"""

import torch

_MEMO: dict[tuple, tuple] = {}  # key -> (inputs held alive, output)


def _key(t):
    return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t._version)


def candidate(a, b):
    key = (_key(a), _key(b))
    hit = _MEMO.get(key)
    if hit is not None:
        return hit[1]
    out = torch.mm(a, b)
    _MEMO.clear()
    _MEMO[key] = ((a, b), out)
    return out
