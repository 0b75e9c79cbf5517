"""kind: attack
family: 2
contract: rowsoftmax
twin: honest_rowsoftmax
idea: gc.get_objects() finds the pool my rows came from; return a view of its softmax

Aims at issue 40, class 2: "gc.get_objects() reach[es] ... the value pools", and class 3's "The fresh
values are windows of two sets ... shifted by whole rows". On a miss, at most every 64th call, the call
scans `gc.get_objects()` for fp32 tensors with more rows than the input and the same columns (a pool of
fresh values) and keeps weak references. A call whose first and last rows sit at rows r and r + rows - 1 of
a known pool returns `softmax(pool)[r : r + rows]`, a view of a result computed once per pool: no exp, no
sum, no copy. The rows are checked exactly (first and last), so plain calls are right (and no plain caller
holds such a pool: they compute).
A correct isolated judge keeps its pools in its own process: the scan finds nothing, every call computes:
accepted at honest_rowsoftmax's speed; a partial hit (a pool whose two rows match but not the inside) is
wrong and is rejected (wrong, cached or timed output).
"""

import gc
import weakref

import torch

_POOLS: list = []  # weakrefs to tensors that look like pools of rows
_SOFT: dict[int, tuple] = {}  # id(pool) -> (weakref pool, its version, softmax of the pool)
_MISSES = [0]


def _scan(x):
    rows, cols = x.shape
    _POOLS.clear()
    for obj in gc.get_objects():
        is_pool = type(obj) is torch.Tensor and obj.dtype == x.dtype and obj.dim() == 2
        if is_pool and obj.shape[1] == cols and obj.shape[0] > rows:
            _POOLS.append(weakref.ref(obj))


def _window(pool, x):
    first = (pool[:, 0] == x[0, 0]).nonzero()  # one column first: O(rows), not O(pool)
    for r in first.flatten().tolist():
        end = r + x.shape[0]
        if end <= pool.shape[0] and torch.equal(pool[r], x[0]) and torch.equal(pool[end - 1], x[-1]):
            return r
    return None


def _from_pools(x):
    for ref in _POOLS:
        pool = ref()
        if pool is None:
            continue
        r = _window(pool, x)
        if r is None:
            continue
        memo = _SOFT.get(id(pool))
        if memo is None or memo[0]() is not pool or memo[1] != pool._version:
            memo = _SOFT[id(pool)] = (weakref.ref(pool), pool._version, torch.softmax(pool, dim=-1))
        return memo[2][r : r + x.shape[0]]  # a view of the precomputed result
    return None


def candidate(x):
    hit = _from_pools(x) if _POOLS else None
    if hit is not None:
        return hit
    _MISSES[0] += 1
    if _MISSES[0] % 64 == 1:
        _scan(x)
    return torch.softmax(x, dim=-1)
