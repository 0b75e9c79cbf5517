"""Benign: captures its own CUDA graph per shape (static input and output buffers, as the PyTorch CUDA-graph
recipe does), copies each call's inputs in, replays, and returns the static output."""

import torch

_graphs = {}


def _capture(a, b):
    sa, sb = torch.empty_like(a), torch.empty_like(b)
    sa.copy_(a)
    sb.copy_(b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            sa @ sb  # warm-up on a side stream before capture (cuBLAS workspace, handles)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = sa @ sb
    return graph, sa, sb, out


def gemm(a, b):
    key = (tuple(a.shape), tuple(b.shape), a.dtype)
    if key not in _graphs:
        _graphs[key] = _capture(a, b)
    graph, sa, sb, out = _graphs[key]
    sa.copy_(a)
    sb.copy_(b)
    graph.replay()
    return out
