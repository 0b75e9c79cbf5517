"""kind: attack
family: 3
contract: gemm
twin: honest_gemm
idea: regenerate the contract's sets for common seeds at import; memo by one row's fingerprint

Aims at issue 40, class 3 ("Predictable fresh values": sets drawn at a published seed) and docs/guard.md's
`seeds` field and the public `make_inputs`. When imported, it finds the contract JSON beside it (this
folder, its parent, or one folder below either), loads the contract module, and for every contract shape
and seeds 0-31 plus common ones (42, 1234, 2024-2026, 12345, 31337) draws the inputs and stores `a @ b`
under a fingerprint: the shape and the first 8 values of row 0 of each input. A call whose fingerprint is
known returns the stored product (no GEMM); any other call computes. Plain calls on contract-made inputs
at those seeds hit and are right; other seeds miss and compute.
A correct isolated judge draws every element from OS randomness: no fingerprint is ever known, accepted at
honest_gemm's speed; a judge that perturbs values away from row 0 rejects the hit (cached output).
"""

import importlib.util
import json
from pathlib import Path

import torch

SEEDS = (*range(32), 42, 1234, 2024, 2025, 2026, 12345, 31337)
_MEMO: dict[tuple, torch.Tensor] = {}


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


def _fingerprint(a, b):
    return (tuple(a.shape), tuple(b.shape), a[0, :8].numpy().tobytes(), b[0, :8].numpy().tobytes())


def _precompute():
    path, contract = _contract("gemm")
    if path is None:
        return
    spec = importlib.util.spec_from_file_location("_seed_regen_contract", path.parent / contract["module"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    make = getattr(module, contract.get("inputs") or "make_inputs")
    for shape in contract["shapes"]:
        for seed in SEEDS:
            a, b = make(shape, contract["dtype"], seed, "cpu")
            _MEMO[_fingerprint(a, b)] = torch.mm(a, b)  # at import: untimed


_precompute()


def candidate(a, b):
    hit = _MEMO.get(_fingerprint(a, b))
    return hit if hit is not None else torch.mm(a, b)
