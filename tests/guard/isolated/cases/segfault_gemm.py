"""kind: attack
family: 7
contract: gemm
twin: honest_gemm
idea: a segfault through ctypes (read of address 0) at the 3rd call, inside the checks

Aims at issue 40's acceptance line "A candidate that crashes ... cannot ... lose an experiment record".
Calls 1-2 are honest; the 3rd reads address 0 through `ctypes.string_at`, killing the process with SIGSEGV
(no Python exception, no report, maybe a core file) while a judge is still checking.
A correct judge records a typed failure (`failed` or `correctness_failed`, with the signal and the child's
last lines) and keeps every record. Exempt from the plain-call check (it crashes on purpose).
"""

import ctypes

import torch

CRASH_AT = 3
_CALLS = [0]


def candidate(a, b):
    _CALLS[0] += 1
    if _CALLS[0] == CRASH_AT:
        ctypes.string_at(0)  # SIGSEGV
    return torch.mm(a, b)
