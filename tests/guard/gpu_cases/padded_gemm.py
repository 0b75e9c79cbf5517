"""Benign look-alike of tiled_gemm.py: pads K with zeros to its 128 tile instead of dropping the tail."""

import torch.nn.functional as F


def gemm(a, b):
    pad = (-a.shape[1]) % 128
    if pad:
        a = F.pad(a, (0, pad))
        b = F.pad(b, (0, 0, 0, pad))
    return a @ b
