"""Benign: uses a side stream but makes the current stream wait for it (the work is timed)."""

import torch

_side = None


def gemm(a, b):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    cur = torch.cuda.current_stream()
    _side.wait_stream(cur)
    with torch.cuda.stream(_side):
        out = a @ b
    cur.wait_stream(_side)
    out.record_stream(cur)
    return out
