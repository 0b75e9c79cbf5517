"""Baseline of the paired eval test: correct, with eight wasted passes over the output (slow)."""


def axpy(x, y):
    out = 2.5 * x + y
    for _ in range(8):
        out = out * 1.0
    return out
