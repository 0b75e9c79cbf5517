"""Benign: writes every element of the output buffer the harness passes."""

import numpy as np


def axpy(x, y, out):
    np.multiply(x, 2.5, out=out)
    np.add(out, y, out=out)
    return out
