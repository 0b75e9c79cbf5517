"""kind: honest
family: -
contract: axpy
twin: -
idea: a Triton kernel under @triton.autotune (cached per n); torch.add without CUDA

issue 40: "Triton autotune with its cache". On a GPU with Triton the first call of each size benchmarks
three block sizes (the autotuner runs the kernel several times on the real inputs, then caches the winner);
later calls launch the cached configuration. Without CUDA or Triton it is `torch.add` (gpu_only:
meaningful on a GPU). A correct judge accepts it; autotuning is warm-up, not a verdict.
"""

import torch

_KERNEL: list = []


def _build():
    import triton
    import triton.language as tl

    @triton.autotune(
        configs=[triton.Config({"BLOCK": b}, num_warps=4) for b in (512, 1024, 2048)],
        key=["n"],
    )
    @triton.jit
    def axpy_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, 2.5 * x + y, mask=mask)

    return axpy_kernel


def candidate(x, y):
    if x.is_cuda and not _KERNEL:
        try:
            _KERNEL.append(_build())
        except ImportError:  # no Triton installed: the library call below
            _KERNEL.append(None)
    if not x.is_cuda or _KERNEL[0] is None:
        return torch.add(y, x, alpha=2.5)
    out = torch.empty_like(x)
    n = x.numel()
    _KERNEL[0][lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],)](x, y, out, n)
    return out
