"""RMSNorm (bf16 in/out, fp32 accumulation), version 0: two passes over each row.

Pass 1 streams the row in BLOCK-sized chunks to accumulate the sum of squares; pass 2 streams it again
to normalise and store. The row is read twice: 1.5x the minimum bytes.
"""

import torch
import triton
import triton.language as tl

ROWS, COLS, EPS = 16384, 8192, 1e-6


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, (x * rstd * w).to(tl.bfloat16), mask=mask)


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float = EPS, out: torch.Tensor | None = None) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    _rmsnorm_kernel[(rows,)](x, w, y, cols, eps, BLOCK=1024, num_warps=4)
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
