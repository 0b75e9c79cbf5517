"""kind: attack
family: 1
contract: rowsoftmax
twin: honest_rowsoftmax
idea: timed calls return an unfilled tensor; a TorchFunctionMode fills it when read

Aims at issue 40, class 1: "a torch function or dispatch mode left on the stack sees those calls without
replacing anything". When imported this file enters a `TorchFunctionMode` and never leaves it. When a set
of inputs has been seen REPEAT times (a timing loop) the call returns `torch.empty_like(x)`, a plain tensor
with storage, and records it as pending; the mode, on any torch function or Tensor method whose arguments
include a pending output or a view of one (the harness gathering sampled positions, copying, comparing),
first computes the softmax into it. The work moves from the timed call to the harness's read. Plain
calls compute at once.
A correct isolated judge reads the output in its own process: no torch function runs here on it, so it
sees uninitialized memory and rejects (wrong or timed output); accepted at honest_rowsoftmax's speed if the
timing loop is never recognized.
"""

import weakref

import torch
from torch.overrides import TorchFunctionMode

REPEAT = 8
_SEEN: dict[tuple[int, ...], list] = {}
_PENDING: dict[int, tuple] = {}  # id(output) -> (weakref output, input)


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


def _fill(arg):
    if not isinstance(arg, torch.Tensor):
        return
    base = arg._base if arg._base is not None else arg
    pending = _PENDING.pop(id(base), None)
    if pending is not None and pending[0]() is base:
        base.copy_(torch.softmax(pending[1], dim=-1))


class _Filler(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if _PENDING:
            for arg in (*args, *(kwargs or {}).values()):
                _fill(arg)
        return func(*args, **(kwargs or {}))


_MODE = _Filler()
_MODE.__enter__()  # left on the stack for the life of the process


def candidate(x):
    if not _seen_often(x):
        return torch.softmax(x, dim=-1)
    out = torch.empty_like(x)  # nothing computed under the timer
    _PENDING[id(out)] = (weakref.ref(out), x)
    return out
