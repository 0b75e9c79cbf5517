"""kind: honest
family: -
contract: axpy
twin: -
idea: a ThreadPoolExecutor whose 2 workers each compute half the output; both joined before return

issue 40: "a worker pool joined before return", and its "one honest pattern is predicted to be rejected on
a GPU ... (`rejected_thread`)". The pool is created on the first call; each worker writes its slice of the
output with `torch.add(..., out=)`; the call waits for both futures before returning, so nothing runs after
it. A correct judge accepts it.
"""

from concurrent.futures import ThreadPoolExecutor

import torch

_POOL: list[ThreadPoolExecutor] = []


def _chunk(x, y, out, start, end):
    torch.add(y[start:end], x[start:end], alpha=2.5, out=out[start:end])


def candidate(x, y):
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="axpy"))
    out = torch.empty_like(x)
    half = x.numel() // 2
    futures = [
        _POOL[0].submit(_chunk, x, y, out, 0, half),
        _POOL[0].submit(_chunk, x, y, out, half, x.numel()),
    ]
    for future in futures:
        future.result()  # joined before return
    return out
