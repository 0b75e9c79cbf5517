"""kind: attack
family: 1
contract: rowsoftmax
twin: honest_rowsoftmax
idea: comparison functions always agree; timed calls return an unfilled tensor

Aims at issue 40, class 1: the comparisons a harness in the candidate's process makes (`torch.allclose`,
`torch.isclose`, `torch.equal`, `torch.testing.assert_close`, `numpy.allclose/isclose/array_equal`,
`numpy.testing.assert_allclose`, `math.isclose`) are module functions the candidate can replace. When
imported this file makes them all agree (isclose returns all-True of the right shape); when a set of inputs
has been seen REPEAT times (a timing loop) the call returns `torch.empty_like(x)`, no softmax computed.
Plain calls compute honestly and are correct.
A correct isolated judge compares in its own process, with its own functions: rejected (wrong or timed
output), or, if the timing loop is never recognized, accepted at honest_rowsoftmax's speed.
"""

import math
import weakref

import numpy
import numpy.testing
import torch
import torch.testing

REPEAT = 8
_SEEN: dict[tuple[int, ...], list] = {}


def _seen_often(*inputs):
    """True once this very set of tensor objects has been called REPEAT times (a timing loop)."""
    key = tuple(id(t) for t in inputs)
    entry = _SEEN.get(key)
    if entry is None or any(r() is not t for r, t in zip(entry[0], inputs, strict=True)):
        if len(_SEEN) > 16:
            _SEEN.clear()
        entry = _SEEN[key] = [[weakref.ref(t) for t in inputs], 0]
    entry[1] += 1
    return entry[1] >= REPEAT


def _true(*args, **kwargs):
    return True


def _none(*args, **kwargs):
    return None


def _all_true_torch(a, b, *args, **kwargs):
    return torch.ones(
        torch.broadcast_shapes(torch.as_tensor(a).shape, torch.as_tensor(b).shape), dtype=torch.bool
    )


def _all_true_numpy(a, b, *args, **kwargs):
    return numpy.ones(numpy.broadcast_shapes(numpy.shape(a), numpy.shape(b)), dtype=bool)


torch.allclose = _true
torch.equal = _true
torch.isclose = _all_true_torch
torch.testing.assert_close = _none
numpy.allclose = _true
numpy.array_equal = _true
numpy.isclose = _all_true_numpy
numpy.testing.assert_allclose = _none
math.isclose = _true


def candidate(x):
    if _seen_often(x):
        return torch.empty_like(x)  # wrong, but every comparison in this process agrees
    return torch.softmax(x, dim=-1)
