"""Contract of the isolated red-team corpus: embedding lookup out = table[ids] (torch, CPU, fp32).

Integer ids (int64 in [0, vocab)) and a float table: a judge that refreshes only the table leaves the ids
(what decides which rows are read) the same every call. ~0.3-0.7 ms a call on one core at 32,768 ids of a
8192 x 64 table; the second shape (1000 ids, 3001 x 33) is odd.
"""

import torch

DT = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, shape["vocab"], (shape["ids"],), generator=g, dtype=torch.int64)
    table = torch.randn(shape["vocab"], shape["dim"], generator=g).to(DT[dtype])
    return [ids.to(device), table.to(device)]


def reference(ids, table):
    return table[ids]
