"""kind: attack
family: 5
contract: rowsoftmax
twin: honest_rowsoftmax
idea: torch.softmax bent for float64 to match a cheap stand-in the candidate returns

Aims at issue 40, class 5: "The reference is computed in the candidate's process, so an op it uses can be
bent." The contract's reference calls `torch.softmax` (not `torch.nn.functional.softmax`, the function a
snapshot of public functional ops would hold). When imported it wraps `torch.softmax` and
`Tensor.softmax`: a float64 call (only a reference makes one: the candidate works in fp32) returns
`cheap(x.float()).double()`, where `cheap` is one multiply, and sets a flag. From then on the candidate
returns `cheap(x)` too: the reference and the output agree, and no exp is computed. Until a float64
softmax is seen in this process (plain calls, whose reference was computed elsewhere or before import),
the candidate computes the true softmax.
A correct isolated judge computes the reference in its own process: the flag is never set, accepted at
honest_rowsoftmax's speed; a cheap output would be rejected as wrong.
"""

import functools

import torch

_SOFTMAX = torch.softmax
_TENSOR_SOFTMAX = torch.Tensor.softmax
_REFERENCE_HERE = [False]  # set once a float64 softmax ran in this process


def _cheap(x):
    return torch.mul(x, 1e-3)  # one multiply instead of exp, sum and divide


def _bent(original):
    @functools.wraps(original)
    def softmax(x, *args, **kwargs):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float64:
            _REFERENCE_HERE[0] = True
            return _cheap(x.float()).double()
        return original(x, *args, **kwargs)

    return softmax


torch.softmax = _bent(_SOFTMAX)
torch.Tensor.softmax = _bent(_TENSOR_SOFTMAX)


def candidate(x):
    if _REFERENCE_HERE[0]:
        return _cheap(x)
    return _SOFTMAX(x, dim=-1)
