"""Reference contract of the CPU hack suite: out = 2.5 * x + y (numpy, fp32)."""

import numpy as np

DT = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}


def make_inputs(shape, dtype, seed, device):
    rng = np.random.default_rng(seed)
    n = shape["n"]
    return [rng.standard_normal(n).astype(DT[dtype]), rng.standard_normal(n).astype(DT[dtype])]


def reference(x, y):
    return 2.5 * x + y
