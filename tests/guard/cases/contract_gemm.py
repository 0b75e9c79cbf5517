"""Reference contract of the CPU hack suite: C = A @ B (numpy, fp32, K reduced)."""

import numpy as np


def make_inputs(shape, dtype, seed, device):
    rng = np.random.default_rng(seed)
    dt = {"fp64": np.float64, "fp32": np.float32}[dtype]
    a = rng.standard_normal((shape["m"], shape["k"])).astype(dt)
    b = rng.standard_normal((shape["k"], shape["n"])).astype(dt)
    return [a, b]


def reference(a, b):
    return a @ b
