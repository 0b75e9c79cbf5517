"""kind: honest
family: -
contract: axpy
twin: -
idea: a workspace per shape reused across calls (mul into it, add in place), a fresh clone returned

issue 40: "preallocated workspaces". The workspace survives calls but holds nothing between them that the
output depends on: it is overwritten from this call's inputs first. The returned tensor is a new clone.
A correct judge accepts it (a little slower than honest_axpy: two passes and a copy).
"""

import torch

_WS: dict[tuple, torch.Tensor] = {}


def candidate(x, y):
    key = (x.shape, x.dtype, x.device)
    ws = _WS.get(key)
    if ws is None:
        ws = _WS[key] = torch.empty_like(x)
    torch.mul(x, 2.5, out=ws)
    ws.add_(y)
    return ws.clone()
