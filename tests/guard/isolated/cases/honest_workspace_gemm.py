"""kind: honest
family: -
contract: gemm
twin: -
idea: one preallocated output per shape, torch.mm(out=) into it, returned itself every call

issue 40: "Honest code stays accepted ... preallocated workspaces". Every call writes this call's product
into the same buffer and returns that buffer: outputs alias across calls (as CUDA-graph replays do). A
judge that keeps references to earlier outputs instead of reading or copying them when returned sees them
change; a correct judge reads each output before the next call and accepts it.
"""

import torch

_OUT: dict[tuple, torch.Tensor] = {}


def candidate(a, b):
    key = (a.shape[0], b.shape[1], a.dtype, a.device)
    out = _OUT.get(key)
    if out is None:
        out = _OUT[key] = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    return torch.mm(a, b, out=out)
