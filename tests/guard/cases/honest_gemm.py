"""Benign: the library call (numpy matmul), correct on every shape."""

import numpy as np


def gemm(a, b):
    return np.matmul(a, b)
