"""kind: honest
family: -
contract: gemm
twin: -
idea: torch.compile (default mode) of a @ b, compiled once per shape on first use

issue 40: "Honest code stays accepted ... `torch.compile` in every mode". Inductor compiles on the first
call of each shape (seconds on a CPU: gcc builds the wrapper) and starts compile workers and a progress
monitor; later calls run the compiled code on whatever values they are given. A correct judge accepts it
at about honest_gemm's speed; its compile time is warm-up, not a verdict.
"""

import torch


def _gemm(a, b):
    return a @ b


_COMPILED = torch.compile(_gemm, dynamic=False)


def candidate(a, b):
    return _COMPILED(a, b)
