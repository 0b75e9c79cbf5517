"""The kernel of the paired `eval` step of the device run (beside bench/paired_bench.py): an 8192^3 bf16
GEMM, plus a copy of EXTRA bf16 elements when EXTRA > 0 (the slower candidate; 36M elements is ~3 %)."""

import torch

EXTRA = 0


def make():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(8192, 8192, device="cuda", dtype=torch.bfloat16)
    src = torch.randn(max(EXTRA, 1), device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)

    def run():
        torch.mm(a, b, out=c)
        if EXTRA:
            dst.copy_(src)
        return c

    return run
