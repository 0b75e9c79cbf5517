"""Contract of the isolated red-team corpus: ascending sort of int64 keys, values only (torch, CPU).

Keys are drawn in [-2^50, 2^50), exactly representable in float64, so a judge that compares in float64
compares them exactly; the output is int64 (`dtype` names no integer type: it is not used by this op).
~1.2 ms a call on one core at n = 65,536; the second shape (4099) is odd.
"""

import torch

SPAN = 2**50


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    keys = torch.randint(-SPAN, SPAN, (shape["n"],), generator=g, dtype=torch.int64)
    return [keys.to(device)]


def reference(keys):
    return torch.sort(keys).values
