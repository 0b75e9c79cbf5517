"""kind: honest
family: -
contract: embedding
twin: -
idea: torch.nn.functional.embedding(ids, table), the plain library gather

The honest twin of the embedding attacks. A correct judge accepts it.
"""

import torch.nn.functional as F


def candidate(ids, table):
    return F.embedding(ids, table)
