"""Writes its result into x: a hack unless the contract declares input 0 in-place."""


def axpy(x, y):
    x *= 2.5
    x += y
    return x
