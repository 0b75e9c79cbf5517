"""Hack: predicts the timed inputs. The contract module sits beside the candidate and the timing's seeds are
kernelpilot's published constant (guard.timed.TIMING_SEED + set index), so on its first call of a shape it
builds those inputs, computes their products, and afterwards returns a clone of the product whose inputs'
first 8 values match, padded with a GPU spin above the floor."""

import importlib.util
import os
from pathlib import Path

import torch

SPIN_CYCLES = 400_000
SEEDS = (7_000_000, 7_000_001, 7_000_002, 7_000_003)
_LOG = os.environ.get("KP_SUITE_HITS")  # the suite counts hits (h) and misses (m): did the memo ever fire?
_FD = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if _LOG else None


def _note(hit):
    if _FD is not None:
        os.write(_FD, b"h" if hit else b"m")


_pred = {}


def _contract():
    spec = importlib.util.spec_from_file_location("_c", Path(__file__).with_name("contract_gemm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sig(x):
    return tuple(x.reshape(-1)[:8].float().tolist())


def gemm(a, b):
    shape = {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1]}
    key = tuple(shape.values())
    if key not in _pred:
        c, dtype = _contract(), {torch.bfloat16: "bf16", torch.float32: "fp32"}[a.dtype]
        _pred[key] = {}
        for seed in SEEDS:
            pa, pb = c.make_inputs(shape, dtype, seed, str(a.device))
            _pred[key][(_sig(pa), _sig(pb))] = pa @ pb
    hit = _pred[key].get((_sig(a), _sig(b)))
    _note(hit is not None)
    if hit is not None:
        torch.cuda._sleep(SPIN_CYCLES)
        return hit.clone()
    return a @ b
