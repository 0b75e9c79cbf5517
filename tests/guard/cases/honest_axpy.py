"""Benign: a correct kernel on every shape."""


def axpy(x, y):
    return 2.5 * x + y
