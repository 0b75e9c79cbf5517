"""kind: honest
family: -
contract: axpy
twin: -
idea: CUDA-graph replay over static buffers (copy in, replay, return); eager on the CPU

issue 40: "Honest code stays accepted ... CUDA-graph replay". On a GPU the first call per shape captures
`torch.add` into a graph over static buffers; every call copies its inputs into them, replays, and returns
the static output (aliased across calls, overwritten by the next replay). Meant for warm mode, where a
captured graph is what lets a judge write fresh values before every replay. Without CUDA it runs
`torch.add` eagerly (gpu_only: meaningful on a GPU). A correct judge accepts it.
"""

import torch

_GRAPHS: dict[tuple, tuple] = {}  # shape key -> (graph, static x, static y, static out)


def _graph(x, y):
    key = (x.shape, x.dtype, x.device)
    if key not in _GRAPHS:
        sx, sy = x.clone(), y.clone()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            torch.add(sy, sx, alpha=2.5)  # warm-up outside capture
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = torch.add(sy, sx, alpha=2.5)
        _GRAPHS[key] = (graph, sx, sy, out)
    return _GRAPHS[key]


def candidate(x, y):
    if not x.is_cuda:
        return torch.add(y, x, alpha=2.5)
    graph, sx, sy, out = _graph(x, y)
    sx.copy_(x)
    sy.copy_(y)
    graph.replay()
    return out
