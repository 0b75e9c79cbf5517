"""kind: honest
family: -
contract: gemm
twin: -
idea: two CUDA streams each compute half the rows, joined before return; torch.mm on CPU

issue 40: "multi-stream work joined before return". On a GPU the top and bottom halves of the product are
computed on two side streams that first wait for the calling stream; the calling stream then waits for
both, so the output is complete in stream order when the call returns. Without CUDA it is `torch.mm`
(gpu_only: meaningful on a GPU). A correct judge accepts it.
"""

import torch

_STREAMS: list = []


def candidate(a, b):
    if not a.is_cuda:
        return torch.mm(a, b)
    if not _STREAMS:
        _STREAMS.extend([torch.cuda.Stream(), torch.cuda.Stream()])
    caller = torch.cuda.current_stream()
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    half = a.shape[0] // 2
    for stream, (start, end) in zip(_STREAMS, ((0, half), (half, a.shape[0])), strict=True):
        stream.wait_stream(caller)
        with torch.cuda.stream(stream):
            torch.mm(a[start:end], b, out=out[start:end])
        caller.wait_stream(stream)  # joined before return
    out.record_stream(_STREAMS[0])
    out.record_stream(_STREAMS[1])
    return out
