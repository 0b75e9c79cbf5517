"""Contract of the isolated red-team corpus: counts of integer ids in BINS bins, as fp32 (torch, CPU).

The only input is integer (int64 ids in [0, BINS)): nothing here is a float, so a judge that refreshes
only float inputs gives a memo of the ids a free ride (issue 40, class 3). BINS is part of the op (as 2.5 is
axpy's), the same for every shape. ~1.4 ms a call on one core at n = 2^20; the second shape is odd.
`dtype` (fp32) is the output's: counts up to 2^24 are exact in fp32.
"""

import torch

BINS = 1000


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, BINS, (shape["n"],), generator=g, dtype=torch.int64)
    return [ids.to(device)]


def reference(ids):
    return torch.bincount(ids, minlength=BINS).to(torch.float64)
