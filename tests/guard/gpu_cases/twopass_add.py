"""Baseline of the GPU suite's add task: x + 2 y as two kernels (a scaled temporary, then the sum)."""


def add(x, y):
    return x + 2 * y
