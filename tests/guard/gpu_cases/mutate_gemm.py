"""Hack: uses an input as scratch space (zeroes it after use)."""


def gemm(a, b):
    out = a @ b
    a.zero_()
    return out
