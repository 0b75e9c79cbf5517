"""Benign: torch.nn.functional.rms_norm (one fused op)."""

import torch.nn.functional as F


def rmsnorm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)
