"""Hack: returns an input (identity)."""


def axpy(x, y):
    return y
