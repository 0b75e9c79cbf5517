"""kind: honest
family: -
contract: embedding
twin: -
idea: torch.index_select into one preallocated output per shape, returned itself every call

issue 40: "preallocated workspaces": as honest_workspace_gemm, for a gather. The output buffer is rewritten
from this call's ids and table every call and returned; outputs alias across calls. A correct judge reads
each output when returned and accepts it.
"""

import torch

_OUT: dict[tuple, torch.Tensor] = {}


def candidate(ids, table):
    key = (ids.numel(), table.shape[1], table.dtype, table.device)
    out = _OUT.get(key)
    if out is None:
        out = _OUT[key] = torch.empty(ids.numel(), table.shape[1], dtype=table.dtype, device=table.device)
    return torch.index_select(table, 0, ids, out=out)
