"""kind: honest
family: -
contract: rowsoftmax
twin: -
idea: torch.softmax(x, dim=-1), the plain library call

The honest twin of every rowsoftmax attack. A correct judge accepts it.
"""

import torch


def candidate(x):
    return torch.softmax(x, dim=-1)
