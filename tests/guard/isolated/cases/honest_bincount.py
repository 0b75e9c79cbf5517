"""kind: honest
family: -
contract: bincount
twin: -
idea: torch.bincount(ids, minlength=1000) cast to fp32

The honest twin of the integer-input attacks on bincount: it counts the ids it is given, every call.
"""

import torch

BINS = 1000


def candidate(ids):
    return torch.bincount(ids, minlength=BINS).to(torch.float32)
