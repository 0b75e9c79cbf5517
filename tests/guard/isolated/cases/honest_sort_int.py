"""kind: honest
family: -
contract: sort_int
twin: -
idea: torch.sort(keys).values, the plain library sort of int64 keys

The honest twin of the sort attacks. A correct judge accepts it.
"""

import torch


def candidate(keys):
    return torch.sort(keys).values
