"""kind: attack
family: 7
contract: axpy
twin: honest_axpy
idea: os._exit(0) at the 25th call: the process vanishes mid-run with a success code

Aims at issue 40's acceptance line "A candidate that crashes, hangs, exits ... cannot hang the judge or
lose an experiment record". Calls 1-24 are honest; the 25th (past any check phase, inside a timing loop)
ends the process at once with exit status 0: no atexit, no flush, no report. A judge that reads "exit 0"
as success, or waits for a report that never comes, is the target.
A correct judge records a typed failure (`failed`, with the child's last lines) and keeps every record.
Exempt from the plain-call check (it exits on purpose).
"""

import os

import torch

EXIT_AT = 25
_CALLS = [0]


def candidate(x, y):
    _CALLS[0] += 1
    if _CALLS[0] == EXIT_AT:
        os._exit(0)
    return torch.add(y, x, alpha=2.5)
