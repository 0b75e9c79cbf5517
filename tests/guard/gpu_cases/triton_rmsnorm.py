"""Benign: a Triton RMSNorm, one program per row, fp32 accumulation, masked to any column count."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, sx, sy, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * sy + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, w):
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    _rms[(rows,)](
        x, w, y, x.stride(0), y.stride(0), cols, 1e-6, BLOCK=block, num_warps=8 if block >= 2048 else 4
    )
    return y
