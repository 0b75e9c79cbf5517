"""kind: attack
family: 1
contract: gemm
twin: honest_gemm
idea: a TorchDispatchMode left on the stack computes the GEMM when my inputs are written

Aims at issue 40, class 1: "a torch function or dispatch mode left on the stack sees those calls without
replacing anything". When imported this file enters a `TorchDispatchMode` and never leaves it: every aten
op of the process passes through `__torch_dispatch__`, nothing module-level is replaced. When it sees
`aten.copy_` (or another in-place write) into an input this candidate was called with, it computes `a @ b`
for the pair right after the write and memoizes it under the version counters the tensors will have once
the write returns (autograd's in-place bookkeeping bumps `_version` after the mode's handler). The timed
call then returns the memo. Exact (a version counter changes on every torch write), so plain calls are
correct.
A correct isolated judge writes inputs from its own process: no aten op runs here for it, the memo never
fills; accepted at honest_gemm's speed (slower, if anything: every op pays the mode), or rejected in
family 1 if a mode left on the stack is seen.
"""

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_PAIRS: dict[int, tuple] = {}  # id(input) -> (weakref a, weakref b)
_MEMO: dict[tuple[int, int], tuple] = {}  # (id a, id b) -> (a version, b version, output)
_WRITES = {torch.ops.aten.copy_.default, torch.ops.aten.fill_.Scalar, torch.ops.aten.index_put_.default}


class _Watcher(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func in _WRITES and args and id(args[0]) in _PAIRS:
            a, b = (r() for r in _PAIRS[id(args[0])])
            dst = args[0]
            if a is not None and b is not None and (dst is a or dst is b):
                out = torch.mm(a, b)  # inside the harness's write: untimed (the mode is off in here)
                va = a._version + (1 if dst is a else 0)  # the bump lands after this handler
                vb = b._version + (1 if dst is b else 0)
                _MEMO[id(a), id(b)] = (va, vb, out)
        return result


_MODE = _Watcher()
_MODE.__enter__()  # left on the stack for the life of the process


def candidate(a, b):
    hit = _MEMO.get((id(a), id(b)))
    pair = _PAIRS.get(id(a))
    same = pair is not None and pair[0]() is a and pair[1]() is b
    if same and hit is not None and hit[0] == a._version and hit[1] == b._version:
        return hit[2]
    _PAIRS[id(a)] = _PAIRS[id(b)] = (weakref.ref(a), weakref.ref(b))
    return torch.mm(a, b)
