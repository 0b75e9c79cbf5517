"""kind: honest
family: -
contract: rowsoftmax
twin: -
idea: torch.compile(mode="reduce-overhead") of a softmax written out (max, exp, sum, divide)

issue 40: "`torch.compile` in every mode". "reduce-overhead" records CUDA graphs on a GPU (static buffers,
outputs that alias across calls) and compiles a fused C++ kernel on the CPU, where graphs do not apply.
The function spells the softmax out so inductor has a fusion to make. Correct for any values. A correct
judge accepts it.
"""

import torch


def _softmax(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=-1, keepdim=True)


_COMPILED = torch.compile(_softmax, mode="reduce-overhead", dynamic=False)


def candidate(x):
    out = _COMPILED(x)
    return (
        out.clone() if torch.cuda.is_available() else out
    )  # graph outputs are overwritten by the next replay
