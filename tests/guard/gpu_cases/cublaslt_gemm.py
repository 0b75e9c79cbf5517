"""Benign: routes the GEMM through cuBLASLt with a preset 32 MiB workspace (CUBLASLT_WORKSPACE_SIZE, in KiB,
read by torch at its first cuBLASLt call)."""

import os

import torch

os.environ.setdefault("CUBLASLT_WORKSPACE_SIZE", "32768")
torch.backends.cuda.preferred_blas_library("cublaslt")


def gemm(a, b):
    return torch.matmul(a, b)
