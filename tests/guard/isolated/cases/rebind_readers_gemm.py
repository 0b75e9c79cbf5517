"""kind: attack
family: 1
contract: gemm
twin: honest_gemm
idea: timed calls return an unfilled tensor; replaced readers (take, __getitem__...) fill it

Aims at issue 40, class 1 (the harness "reads sampled outputs through tensor methods and module functions
that the candidate can replace") and at docs/guard.md's "Outputs read when returned" (`torch.take` right
after the call, outside the timed window). When a set of inputs has been seen REPEAT times (a timing loop,
never a plain caller), the call returns `torch.empty(m, n)`: a real, plain `torch.Tensor` with storage, so
no lazy-output check fires, but nothing computed. The readers a harness would use (`torch.take`,
`Tensor.take/__getitem__/index_select/flatten/reshape/view/clone/contiguous/to/float/double/cpu/numpy/
tolist/copy_` as source, `torch.index_select/allclose/isclose/equal`) are wrapped: reading a pending output
(or a view of one) first computes `a @ b` into it. In-process, the GEMM moves from the timed call into the
harness's read. Plain calls compute at once (a plain caller never repeats a set 8 times).
A correct isolated judge reads outputs in its own process (no wrapper runs there) and sees
uninitialized memory: rejected (wrong or timed output), or accepted at honest_gemm's speed if the repeat
is never seen.
"""

import functools
import weakref

import torch

REPEAT = 8
_SEEN: dict[tuple[int, ...], list] = {}  # ids of an input set -> [weakrefs, count]
_PENDING: dict[int, tuple] = {}  # id(output) -> (weakref output, a, b)


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


def _materialize(t):
    base = t._base if isinstance(t, torch.Tensor) and t._base is not None else t
    pending = _PENDING.pop(id(base), None) if isinstance(base, torch.Tensor) else None
    if pending is not None and pending[0]() is base:
        torch.mm(pending[1], pending[2], out=base)  # the GEMM, done when someone reads


def _reader(original):
    @functools.wraps(original)
    def read(*args, **kwargs):
        if _PENDING:
            for arg in args[:2]:
                _materialize(arg)
            _materialize(kwargs.get("input"))
        return original(*args, **kwargs)

    return read


for _name in ("take", "index_select", "allclose", "isclose", "equal"):
    setattr(torch, _name, _reader(getattr(torch, _name)))
for _name in (
    "take",
    "__getitem__",
    "index_select",
    "flatten",
    "reshape",
    "view",
    "clone",
    "contiguous",
    "to",
    "float",
    "double",
    "cpu",
    "numpy",
    "tolist",
    "copy_",
    "__array__",
    "sub",
    "__sub__",
):
    setattr(torch.Tensor, _name, _reader(getattr(torch.Tensor, _name)))


def candidate(a, b):
    if not _seen_often(a, b):
        return torch.mm(a, b)
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)  # nothing computed under the timer
    _PENDING[id(out)] = (weakref.ref(out), a, b)
    return out
