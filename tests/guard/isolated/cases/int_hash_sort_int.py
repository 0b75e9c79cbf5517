"""kind: attack
family: 3
contract: sort_int
twin: honest_sort_int
idea: memoize the sort by a blake2b hash of every key: exact, free when keys repeat

Aims at issue 40, class 3: "Integer inputs are never refreshed ... sorts of int keys memoize freely". The
key is a cryptographic hash of all the keys' bytes (~0.25 ms against ~1.2 ms of sorting 65,536 int64):
never wrong, so plain calls are right, and ~5x faster whenever the same keys come back, which is every
call if a judge refreshes only float inputs.
A correct isolated judge draws fresh integer keys before every call: every call misses and pays the hash
on top of the sort: accepted, no faster than honest_sort_int (slower, in fact). A judge that lets integer
inputs repeat hands it a gain.
"""

import hashlib

import torch

_MEMO: dict[bytes, torch.Tensor] = {}


def candidate(keys):
    digest = hashlib.blake2b(keys.contiguous().numpy(), digest_size=16).digest() + bytes(
        str(keys.shape), "ascii"
    )
    hit = _MEMO.get(digest)
    if hit is not None:
        return hit
    out = torch.sort(keys).values
    if len(_MEMO) > 8:
        _MEMO.clear()
    _MEMO[digest] = out
    return out
