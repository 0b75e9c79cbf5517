"""kind: attack
family: 5
contract: embedding
twin: honest_embedding
idea: gather ops spin 0.3 ms when called from another kernel.py (the baseline side)

Aims at issue 40, class 5: "the baseline shares the candidate's process, so an unlisted ... op ... slows
it". `torch.embedding` (which `torch.nn.functional.embedding` calls), `torch.index_select`, `torch.take`,
`torch.gather` and `Tensor.__getitem__/index_select/take/gather` are wrapped when imported: the wrapper
finds the first calling frame outside torch and, if it is a file named `kernel.py` other than this one (the
baseline side's copy of the candidate file), spins 0.3 ms first. Calls from this file, from torch, from any
plain caller run at full speed, so the kernel itself is honest.
A correct isolated judge runs the baseline in its own process: accepted at honest_embedding's speed.
"""

import functools
import os
import sys
import time

import torch

SPIN_S = 0.0003
_ME = os.path.realpath(__file__)
SPINS = [0]  # calls slowed so far


def _foreign_kernel():
    frame = sys._getframe(2)
    while frame is not None and f"{os.sep}torch{os.sep}" in frame.f_code.co_filename:
        frame = frame.f_back
    if frame is None:
        return False
    path = frame.f_code.co_filename
    return os.path.basename(path) == "kernel.py" and os.path.realpath(path) != _ME


def _slowed(original):
    @functools.wraps(original)
    def call(*args, **kwargs):
        if _foreign_kernel():
            SPINS[0] += 1
            end = time.perf_counter() + SPIN_S
            while time.perf_counter() < end:
                pass
        return original(*args, **kwargs)

    return call


for _name in ("embedding", "index_select", "take", "gather"):
    setattr(torch, _name, _slowed(getattr(torch, _name)))
for _name in ("__getitem__", "index_select", "take", "gather"):
    setattr(torch.Tensor, _name, _slowed(getattr(torch.Tensor, _name)))


def candidate(ids, table):
    return torch.nn.functional.embedding(ids, table)
