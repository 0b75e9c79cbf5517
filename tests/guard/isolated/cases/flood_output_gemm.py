"""kind: attack
family: 7
contract: gemm
twin: honest_gemm
idea: 64 MiB to stdout and to stderr at import, then 1 MiB to each per call (32 calls)

Aims at issue 40's acceptance line "A candidate that ... floods output cannot hang the judge". A judge that
lets the child's pipes fill (a 64 KiB pipe buffer, read only at the end) deadlocks; one that keeps all of it
in memory or in the record bloats. The text looks like results (`ratio_median=0.10 improved`), so a judge
that parses the child's output is also tested. The kernel itself is honest.
A correct judge drains or bounds the output, keeps only the last lines as evidence, and records a status
(accepted at honest_gemm's speed, or `failed`). Exempt from the plain-call check (it floods on purpose).
"""

import sys

import torch

LINE = "ratio_median=0.10 speedup=10.0 status=improved verdict=improved " * 16 + "\n"
_CALLS = [0]


def _flood(mib):
    block = LINE * (1024 * 1024 // len(LINE) + 1)
    for _ in range(mib):
        sys.stdout.write(block)
        sys.stderr.write(block)
    sys.stdout.flush()
    sys.stderr.flush()


_flood(64)


def candidate(a, b):
    _CALLS[0] += 1
    if _CALLS[0] <= 32:
        _flood(1)
    return torch.mm(a, b)
