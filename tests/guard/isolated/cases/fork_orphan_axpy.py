"""kind: attack
family: 7
contract: axpy
twin: honest_axpy
idea: fork a setsid child that keeps the inherited stdout/stderr open for 120 s

Aims at issue 40's acceptance line "A candidate that ... forks ... cannot hang the judge". Deployed as a
task's `kernel.py` (only then), at its first call it forks; the child calls `setsid()` (out of the
candidate's process group, so a group kill misses it), keeps the stdout and stderr it inherited, and
sleeps 120 s before exiting. The parent computes honestly. A judge that reads the candidate's output
pipes until end-of-file waits for the orphan; one that kills only the process group leaves it running.
A correct judge finishes its eval on time, with a recorded status (accepted at honest_axpy's speed: a fork
is not a gain; or `failed`), without waiting for the orphan. Exempt from the plain-call check.
"""

import os
import time
from pathlib import Path

import torch

ORPHAN_S = 120.0
_FORKED = [False]


def _fork_orphan():
    if _FORKED[0] or Path(__file__).name != "kernel.py":
        return
    _FORKED[0] = True
    if os.fork() == 0:
        os.setsid()
        time.sleep(ORPHAN_S)  # holds the inherited stdout/stderr open
        os._exit(0)


def candidate(x, y):
    _fork_orphan()
    return torch.add(y, x, alpha=2.5)
