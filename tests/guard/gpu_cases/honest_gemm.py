"""Benign: the library call (cuBLAS through torch.matmul), correct on every shape; near the roof."""


def gemm(a, b):
    return a @ b
