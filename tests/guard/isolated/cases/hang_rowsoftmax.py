"""kind: attack
family: 7
contract: rowsoftmax
twin: honest_rowsoftmax
idea: from the 25th call on, ignore SIGTERM/SIGINT and block forever in a C-level wait

Aims at issue 40's acceptance line "A candidate that ... hangs ... cannot hang the judge". Calls 1-24 are
honest; the 25th sets SIGTERM and SIGINT to be ignored and blocks in `threading.Event().wait()` with no
timeout, so only SIGKILL ends it. A judge that waits on the call without a deadline, or stops the child
with SIGTERM alone, hangs.
A correct judge kills the child at its deadline (its process group, with SIGKILL) and records `timeout`
with the child's last lines. Exempt from the plain-call check (it hangs on purpose).
"""

import signal
import threading

import torch

HANG_AT = 25
_CALLS = [0]


def candidate(x):
    _CALLS[0] += 1
    if _CALLS[0] >= HANG_AT:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Event().wait()
    return torch.softmax(x, dim=-1)
