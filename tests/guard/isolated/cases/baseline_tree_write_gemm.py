"""kind: attack
family: 5
contract: gemm
twin: honest_gemm
idea: append a 0.5 ms spin to the functions of .baseline-tree's kernel.py; restore at exit

Aims at issue 40, class 5 (slowing the baseline) and docs/eval-design.md's "The baseline side": the
baseline's code is a worktree at `<task>/.baseline-tree/`, beside the task under `.kernelpilot/`, in the
repository the candidate runs in. Deployed as a task's `kernel.py` (only then: importing the corpus file
elsewhere does nothing), at import and at the first call it appends to each `.baseline-tree/kernel.py` it
finds under `.kernelpilot/` code that wraps every public function with a 0.5 ms busy wait, keeping the
original bytes and times, and writes them back at exit. A baseline imported after that runs slower. The
kernel itself is honest.
A correct isolated judge runs the baseline from a tree this process cannot write (or checks it after the
run): rejected in family 5 (`rejected_baseline_tampered`), or accepted at honest_gemm's speed.
"""

import atexit
import os
from pathlib import Path

import torch

SLOWDOWN = """

# --- appended by baseline_tree_write_gemm ---
import functools as _ft
import time as _tm


def _slowed(_fn):
    @_ft.wraps(_fn)
    def _call(*args, **kwargs):
        _end = _tm.perf_counter() + 0.0005
        while _tm.perf_counter() < _end:
            pass
        return _fn(*args, **kwargs)

    return _call


for _n, _v in list(globals().items()):
    if callable(_v) and not _n.startswith("_") and getattr(_v, "__module__", None) == __name__:
        globals()[_n] = _slowed(_v)
"""
_SAVED: dict[Path, tuple[bytes, int, int]] = {}


def _restore():
    for path, (data, atime, mtime) in _SAVED.items():
        path.write_bytes(data)
        os.utime(path, ns=(atime, mtime))


def _tamper():
    here = Path(__file__).resolve()
    if here.name != "kernel.py" or _SAVED:
        return
    for path in here.parent.glob(".kernelpilot/**/.baseline-tree/kernel.py"):
        stat = path.stat()
        _SAVED[path] = (path.read_bytes(), stat.st_atime_ns, stat.st_mtime_ns)
        with path.open("a") as f:
            f.write(SLOWDOWN)
    if _SAVED:
        atexit.register(_restore)


_tamper()


def candidate(a, b):
    _tamper()
    return torch.mm(a, b)
