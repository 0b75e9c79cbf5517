"""Benign on the in-place task (the contract declares input 0 in-place): x += 2 y in one kernel."""


def add(x, y):
    x.add_(y, alpha=2)
