"""kind: attack
family: 3
contract: rowsoftmax
twin: honest_rowsoftmax
idea: index the rows of the contract's sets; one row locates the window; precomputed rows

Aims at issue 40, class 3: "The fresh values are windows of two sets drawn at a published seed, shifted by
whole rows: one row identifies the window." When imported, it finds the contract beside it, draws the input
of every shape for seeds 0-31 and common ones, computes each set's softmax, and indexes every row by its
first 4 values. A call walks its input in segments: the first row of a segment names (set, row); the
segment runs to the end of that set (or of the input); its first and last rows are compared exactly; the
output is a view of the precomputed softmax (one segment) or a concatenation (a window over two sets): a
copy instead of exp and sum. Plain calls on contract-made inputs at those seeds are right; others compute.
A correct isolated judge draws every element from OS randomness: no row is ever indexed, accepted at
honest_rowsoftmax's speed; a judge that perturbs rows inside a segment rejects a hit (cached output).
"""

import importlib.util
import json
from pathlib import Path

import torch

SEEDS = (*range(32), 42, 1234, 2024, 2025, 2026, 12345, 31337)
_SETS: list[tuple[torch.Tensor, torch.Tensor]] = []  # (input set, its softmax)
_ROWS: dict[tuple[int, bytes], tuple[int, int]] = {}  # (cols, first 4 values) -> (set index, row)


def _contract(op):
    """The contract JSON that names a module, beside this file or one folder around it."""
    here = Path(__file__).resolve().parent
    found = []
    for folder in (here, here.parent):
        for path in [*folder.glob("*.json"), *folder.glob("*/*.json")]:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and "module" in data and "shapes" in data:
                found.append((path, data))
    named = [f for f in found if f[0].stem == op]
    return (named or found or [(None, None)])[0]


def _precompute():
    path, contract = _contract("rowsoftmax")
    if path is None:
        return
    spec = importlib.util.spec_from_file_location("_window_contract", path.parent / contract["module"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    make = getattr(module, contract.get("inputs") or "make_inputs")
    for shape in contract["shapes"]:
        for seed in SEEDS:
            (x,) = make(shape, contract["dtype"], seed, "cpu")
            keys = x[:, :4].contiguous().numpy()
            for r in range(x.shape[0]):
                _ROWS[x.shape[1], keys[r].tobytes()] = (len(_SETS), r)
            _SETS.append((x, torch.softmax(x, dim=-1)))  # at import: untimed


_precompute()


def _predicted(x):
    parts, i, rows = [], 0, x.shape[0]
    while i < rows:
        hit = _ROWS.get((x.shape[1], x[i, :4].numpy().tobytes()))
        if hit is None:
            return None
        src, soft = _SETS[hit[0]]
        take = min(rows - i, src.shape[0] - hit[1])
        first, last = hit[1], hit[1] + take - 1
        if not (torch.equal(src[first], x[i]) and torch.equal(src[last], x[i + take - 1])):
            return None
        parts.append(soft[first : last + 1])
        i += take
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def candidate(x):
    hit = _predicted(x) if x.dim() == 2 and x.is_contiguous() else None
    return hit if hit is not None else torch.softmax(x, dim=-1)
