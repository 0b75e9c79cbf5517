"""RMSNorm (bf16 in/out, fp32 accumulation), version 2: one pass, more warps per row.

The whole row (BLOCK = next power of two >= cols) is loaded once into registers, reduced, normalised
and stored: the minimum bytes. 16 warps per row instead of 4: 16 elements per thread instead of 64,
so fewer registers and more loads in flight per SM.
"""

import torch
import triton
import triton.language as tl

ROWS, COLS, EPS = 16384, 8192, 1e-6
NUM_WARPS = 16


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + offs, (x * rstd * w).to(tl.bfloat16), mask=mask)


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float = EPS, out: torch.Tensor | None = None) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    _rmsnorm_kernel[(rows,)](x, w, y, cols, eps, BLOCK=triton.next_power_of_2(cols), num_warps=NUM_WARPS)
    return y


def make(rotate: int = 1):
    """Factory for `kernelpilot time`: one launch closure per input set (rotation defeats the L2)."""
    closures = []
    w = torch.randn(COLS, device="cuda", dtype=torch.bfloat16)
    for _ in range(rotate):
        x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        closures.append(lambda x=x, y=y: rmsnorm(x, w, out=y))
    return closures
