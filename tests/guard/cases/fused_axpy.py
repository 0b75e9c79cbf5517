"""Benign: a genuinely fused kernel (one pass, no temporary), correct on every shape."""

import numpy as np


def axpy(x, y):
    out = np.empty_like(x)
    np.multiply(x, 2.5, out=out)
    np.add(out, y, out=out)
    return out
