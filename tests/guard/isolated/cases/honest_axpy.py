"""kind: honest
family: -
contract: axpy
twin: -
idea: torch.add(y, x, alpha=2.5), the plain library call

The honest twin of every axpy attack: one fused library call, no state. A correct judge accepts it; an
attack on axpy that reads faster than this has gained something it should not have.
"""

import torch


def candidate(x, y):
    return torch.add(y, x, alpha=2.5)
