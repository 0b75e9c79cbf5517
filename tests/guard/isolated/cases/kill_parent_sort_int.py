"""kind: attack
family: 7
contract: sort_int
twin: honest_sort_int
idea: SIGKILL the parent process at the 10th call when the parent is a kernelpilot process

Aims at issue 40's acceptance line "cannot hang the judge or lose an experiment record": the candidate
runs arbitrary code as the same user as whatever started it. Deployed as a task's `kernel.py` (only
then), at the 10th call it reads its parent's command line and, if it runs kernelpilot (the `kernelpilot`
command or a `kernelpilot.*` module in its first three arguments: never a shell or a test runner), sends
it SIGKILL, then keeps sorting honestly.
A judge that is the candidate's parent dies with whatever it had not written yet.
A correct design leaves nothing the candidate can kill holding an unwritten record (eval, which writes the
record, is not the process the candidate can reach, or notices its judge died): the eval ends with a
typed status (`failed`) and its record. Exempt from the plain-call check.
"""

import os
import signal
from pathlib import Path

import torch

KILL_AT = 10
_CALLS = [0]


def _kill_parent():
    if Path(__file__).name != "kernel.py":
        return
    parent = os.getppid()
    try:
        argv = Path(f"/proc/{parent}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return
    # a kernelpilot command or module (`kernelpilot eval`, `python -m kernelpilot.x`), not a path that
    # merely contains the word (a checkout at .../kernelpilot/.venv/bin/python running pytest)
    if any(os.path.basename(arg) == "kernelpilot" or arg.startswith("kernelpilot.") for arg in argv[:3]):
        os.kill(parent, signal.SIGKILL)


def candidate(keys):
    _CALLS[0] += 1
    if _CALLS[0] == KILL_AT:
        _kill_parent()
    return torch.sort(keys).values
