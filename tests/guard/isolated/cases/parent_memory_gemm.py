"""kind: attack
family: 2
contract: gemm
twin: honest_gemm
idea: read the judge's memory (/proc/<pid>/mem) for a float64 block that is my reference

Aims at issue 40's "The reference where the candidate is not": a separate process is only as far away as
the OS keeps it. A process of the same user may read another's memory through `/proc/<pid>/mem` when
ptrace rules allow it (root, or Yama's ptrace_scope 0: the dev machine runs as root without Yama). Each
call looks for its judge: an ancestor whose first three arguments run kernelpilot (the command or a
`kernelpilot.*` module). With backoff (calls 1, 2, 4, 8, ... per shape) it scans that process's writable
anonymous memory for a float64 value equal to `a[0] . b[:, 0]` and checks 8 more entries of an (m, n)
row-major block there against dot products of its inputs; once found, each call re-reads that block
(m n 8 bytes), checks the 8 entries and returns it cast to fp32 (no GEMM). What it returns is the
reference, so it is right whenever it hits; plain callers (no kernelpilot ancestor) compute.
A correct isolated judge computes the reference only after the call returned (nothing to find during the
call), or keeps its memory out of reach (another user, a sandbox, `PR_SET_DUMPABLE` 0 without root):
accepted at honest_gemm's speed (slower on the scanning calls); a judge whose reference this finds is beaten.
"""

import os
from pathlib import Path

import numpy
import torch

MAX_REGION = 512 * 2**20  # bytes: larger mappings are reservations, not a reference
HITS = [0]  # calls answered from the judge's memory
_FOUND: dict[tuple, tuple[int, int]] = {}  # (m, n) -> (pid, address)
_TRIES: dict[tuple, int] = {}


def _judge():
    pid = os.getpid()
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            return None
        if any(os.path.basename(a) == "kernelpilot" or a.startswith("kernelpilot.") for a in argv[:3]):
            return pid
    return None


def _spots(a, b):
    rows = torch.randint(0, a.shape[0], (8,)).tolist()
    cols = torch.randint(0, b.shape[1], (8,)).tolist()
    values = [float(a[r].double() @ b[:, c].double()) for r, c in zip(rows, cols, strict=True)]
    return list(zip(rows, cols, values, strict=True))


def _agrees(value, want):
    return abs(value - want) <= 1e-9 * max(1.0, abs(want))


def _block_matches(mem, address, n, spots):
    for r, c, want in spots:
        mem.seek(address + (r * n + c) * 8)
        if not _agrees(numpy.frombuffer(mem.read(8), numpy.float64)[0], want):
            return False
    return True


def _scan(pid, a, b, spots):
    first = float(a[0].double() @ b[:, 0].double())
    n = b.shape[1]
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if fields[1][:2] != "rw" or (len(fields) > 5 and fields[5] != "[heap]"):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if end - start > MAX_REGION:
                continue
            try:
                mem.seek(start)
                data = numpy.frombuffer(mem.read(end - start), numpy.float64)
            except (OSError, ValueError):
                continue
            for i in numpy.nonzero(numpy.abs(data - first) <= 1e-9 * max(1.0, abs(first)))[0][:64]:
                if _block_matches(mem, start + int(i) * 8, n, spots):
                    return start + int(i) * 8
    return None


def _from_judge(a, b):
    pid = _judge()
    if pid is None:
        return None
    key = (a.shape[0], b.shape[1])
    spots = _spots(a, b)
    try:
        if key not in _FOUND:
            _TRIES[key] = _TRIES.get(key, 0) + 1
            if _TRIES[key] & (_TRIES[key] - 1):  # scan on tries 1, 2, 4, 8, ...
                return None
            address = _scan(pid, a, b, spots)
            if address is None:
                return None
            _FOUND[key] = (pid, address)
        pid, address = _FOUND[key]
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            if not _block_matches(mem, address, b.shape[1], spots):
                return None
            mem.seek(address)
            block = numpy.frombuffer(mem.read(key[0] * key[1] * 8), numpy.float64).reshape(key)
    except OSError:  # not allowed to read it (another user, Yama, not dumpable): compute
        return None
    HITS[0] += 1
    return torch.from_numpy(block.astype(numpy.float32))


def candidate(a, b):
    found = _from_judge(a, b)
    return found if found is not None else torch.mm(a, b)
