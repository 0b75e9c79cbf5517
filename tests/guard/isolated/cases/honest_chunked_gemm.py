"""kind: honest
family: -
contract: gemm
twin: -
idea: row blocks of a, one per torch thread (get_num_threads, left alone), mm per block, cat

issue 40: "`torch.set_num_threads` left alone" and an in-place-free chunked algorithm: the block count is
read, never set; every block is a fresh `torch.mm`, joined by `torch.cat`. A correct judge accepts it at
about honest_gemm's speed.
"""

import torch


def candidate(a, b):
    blocks = max(1, min(torch.get_num_threads(), a.shape[0]))
    return torch.cat([torch.mm(part, b) for part in torch.chunk(a, blocks, dim=0)])
