"""One fused elementwise kernel (torch.add with alpha): the overhead bench's candidate and the GPU suite's
fused look-alike (faster than twopass_add.py)."""

import torch


def add(x, y):
    return torch.add(x, y, alpha=2)


def make():
    """The same kernel as a plain `kernelpilot time` factory (the unguarded task)."""
    g = torch.Generator(device="cuda").manual_seed(7)
    n = 12_582_912
    x, y = torch.randn(n, generator=g, device="cuda"), torch.randn(n, generator=g, device="cuda")
    return lambda: add(x, y)
