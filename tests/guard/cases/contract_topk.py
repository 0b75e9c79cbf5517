"""Reference contract of the CPU selection cases: a top-k gating (softmax over experts, top k, renormalized).

Logits are small integers (many exact ties, which any order may break) and every 8th row has one logit of
200, so in fp32 the other probabilities underflow to 0 (any of them is a valid pick; the float64 reference
still ranks them). The reference returns (weights, ids) like the candidate, then every expert's probability.
"""

import numpy as np

DT = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}


def make_inputs(shape, dtype, seed, device):
    rng = np.random.default_rng(seed)
    logits = rng.integers(-4, 5, size=(shape["t"], shape["e"])).astype(np.float64)
    logits[::8, rng.integers(0, shape["e"])] = 200.0
    return [logits.astype(DT[dtype]), np.array([shape["k"]])]


def softmax(x):
    z = np.exp(x - x.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def reference(logits, k):
    p = softmax(logits)
    ids = np.argsort(-p, axis=-1, kind="stable")[:, : int(k[0])]
    w = np.take_along_axis(p, ids, axis=-1)
    return w / w.sum(-1, keepdims=True), ids, p
