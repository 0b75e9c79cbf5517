"""Benign: a persistent Triton RMSNorm: one program per SM (x4), each looping over its share of the rows."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, sx, sy, rows, N, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for row in range(pid, rows, nprog):
        x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(y_ptr + row * sy + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


_sms = {}


def rmsnorm(x, w):
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    dev = x.device.index or 0
    if dev not in _sms:
        _sms[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    grid = (min(rows, 4 * _sms[dev]),)
    block = triton.next_power_of_2(cols)
    _rms[grid](
        x, w, y, x.stride(0), y.stride(0), rows, cols, 1e-6, BLOCK=block, num_warps=8 if block >= 2048 else 4
    )
    return y
