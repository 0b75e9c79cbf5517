"""Three issue-bound Triton kernels for bench/issue_bound.py (issue 32: the instruction-issue floor).

Each is straight-line code (no loops: `tl.static_range` unrolls), so the static count of the code object
(`kernelpilot isa mix`) times the warps launched is what a warp issues, and ncu's counters can be set
beside it. Compiled for sm_90 with Triton 3.6 on a CPU host (Triton's own ptxas, `triton.compile` with
`GPUTarget("cuda", 90, 32)`), their SASS gives (per warp pass; floors on the H100 SXM5 wiki rates):
- `topk_gating_kernel` ROWS=8, 1 warp: 3782 instr (alu 2767, shuffle 688): 65536 rows -> issue 29.6 µs,
  alu pipe 43.4 µs (binds), memory 6.3 µs;
- `row_lse_kernel` C=32, ROWS=32, 4 warps: 522 instr (shuffle 80): 1M rows -> issue 65.5 µs (binds),
  shuffle 40 µs, memory 21.3 µs;
- `qknorm_rope_kernel` TOK=1, 4 warps: 1479 instr: 8192 tokens x 32 heads x 128 -> issue 46.4 µs (binds),
  memory 40 µs.
The `make_*` factories are `kernelpilot time` specs (bench/issue_bound_kernels.py:make_gating); `SPECS`
holds each kernel's launch, inputs and torch reference for the driver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

LOG2_BASE = math.log2(10000.0)


@triton.jit
def topk_gating_kernel(
    logits_ptr, w_ptr, ids_ptr, n_rows, E: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr
):
    """MoE router gating: softmax over E experts, top-K, renormalized (the softmax denominator cancels, so
    the weights are exp(v_j - v_max) / sum_k exp(v_k - v_max)); K rounds of max + argmax + knock-out."""
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, E)
    ks = tl.arange(0, K)
    rmask = rows < n_rows
    x = tl.load(logits_ptr + rows[:, None] * E + cols[None, :], mask=rmask[:, None], other=float("-inf"))
    x = x.to(tl.float32)
    vals = tl.zeros([ROWS, K], dtype=tl.float32)
    ids = tl.zeros([ROWS, K], dtype=tl.int32)
    for j in tl.static_range(K):
        v, idx = tl.max(x, axis=1, return_indices=True)
        vals = tl.where(ks[None, :] == j, v[:, None], vals)
        ids = tl.where(ks[None, :] == j, idx[:, None].to(tl.int32), ids)
        x = tl.where(cols[None, :] == idx[:, None], float("-inf"), x)
    top = tl.max(vals, axis=1)
    e = tl.exp(vals - top[:, None])
    w = e / tl.sum(e, axis=1)[:, None]
    out = rows[:, None] * K + ks[None, :]
    tl.store(w_ptr + out, w, mask=rmask[:, None])
    tl.store(ids_ptr + out, ids, mask=rmask[:, None])


@triton.jit
def row_lse_kernel(x_ptr, out_ptr, n_rows, C: tl.constexpr, ROWS: tl.constexpr):
    """log-sum-exp of each row of C bf16 values: two warp-shuffle reductions per row (max, then sum)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, C)
    rmask = rows < n_rows
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
    m = tl.max(x, axis=1)
    s = tl.sum(tl.exp(x - m[:, None]), axis=1)
    tl.store(out_ptr + rows, m + tl.log(s), mask=rmask)


@triton.jit
def _sincos(a):
    """sin and cos of a float32 angle without library calls: Cody-Waite reduction by pi/2, then minimax
    polynomials; straight-line code (a library sinf/cosf carries a slow path the static count would hold)."""
    q = tl.extra.cuda.libdevice.rint(a * 0.636619772367581343)
    r = a - q * 1.57079601287841796875
    r = r - q * 3.13916473e-07
    r = r - q * 5.39030253e-15
    r2 = r * r
    s = r + r * r2 * (-1.6666654611e-1 + r2 * (8.3321608736e-3 + r2 * -1.9515295891e-4))
    c = 1.0 + r2 * (
        -0.5 + r2 * (4.166664568298827e-2 + r2 * (-1.388731625493765e-3 + r2 * 2.443315711809948e-5))
    )
    qi = q.to(tl.int32)
    swap = (qi & 1) != 0
    sn = tl.where(swap, c, s)
    cs = tl.where(swap, s, c)
    sn = tl.where((qi & 2) != 0, -sn, sn)
    cs = tl.where(((qi + 1) & 2) != 0, -cs, cs)
    return sn, cs


@triton.jit
def qknorm_rope_kernel(
    x_ptr, w_ptr, pos_ptr, out_ptr, n_tok, H: tl.constexpr, D: tl.constexpr, TOK: tl.constexpr,
    LOG2_BASE: tl.constexpr, EPS: tl.constexpr,
):  # fmt: skip
    """Fused per-head RMSNorm + rotate-half RoPE (Qwen3-style q/k path) of x[tok, H, D] bf16; cos/sin are
    computed per element in the kernel (no table)."""
    HALF: tl.constexpr = D // 2
    toks = tl.program_id(0) * TOK + tl.arange(0, TOK)
    tmask = toks < n_tok
    hs = tl.arange(0, H)
    i = tl.arange(0, HALF)
    base = toks[:, None, None] * (H * D) + hs[None, :, None] * D + i[None, None, :]
    m = tmask[:, None, None]
    x0 = tl.load(x_ptr + base, mask=m, other=0.0).to(tl.float32)
    x1 = tl.load(x_ptr + base + HALF, mask=m, other=0.0).to(tl.float32)
    ms = (tl.sum(x0 * x0, axis=2) + tl.sum(x1 * x1, axis=2)) / D
    r = tl.math.rsqrt(ms + EPS)[:, :, None]
    w0 = tl.load(w_ptr + i).to(tl.float32)[None, None, :]
    w1 = tl.load(w_ptr + HALF + i).to(tl.float32)[None, None, :]
    x0 = x0 * r * w0
    x1 = x1 * r * w1
    pos = tl.load(pos_ptr + toks, mask=tmask, other=0).to(tl.float32)
    inv_freq = tl.exp2(-(2.0 * i.to(tl.float32) / D) * LOG2_BASE)
    ang = pos[:, None, None] * inv_freq[None, None, :] + 0.0 * x0
    s, c = _sincos(ang)
    tl.store(out_ptr + base, (x0 * c - x1 * s).to(tl.bfloat16), mask=m)
    tl.store(out_ptr + base + HALF, (x1 * c + x0 * s).to(tl.bfloat16), mask=m)


@dataclass
class Spec:
    """One kernel: its launch (grid in programs, warps), the bytes it must move, and how to check it."""

    name: str
    kernel: Any
    grid: int
    num_warps: int
    roofline: dict[str, Any]  # the op for `kernelpilot roofline` (the memory floor)
    args: tuple[Any, ...]
    consts: dict[str, Any]
    check: Any  # () -> (ok, note): the output against the torch reference

    def launch(self) -> Any:
        """One launch; returns Triton's compiled kernel (its .asm['cubin'] is the code object)."""
        return self.kernel[(self.grid,)](*self.args, **self.consts, num_warps=self.num_warps)


def _gating() -> Spec:
    rows, e, k, per = 65536, 128, 8, 8
    torch.manual_seed(0)
    logits = torch.randn(rows, e, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(rows, k, device="cuda", dtype=torch.float32)
    ids = torch.empty(rows, k, device="cuda", dtype=torch.int32)

    def check() -> tuple[bool, str]:
        lf = logits.float()
        ref_w, ref_ids = torch.softmax(lf, -1).topk(k, dim=-1)
        ref_w = ref_w / ref_w.sum(-1, keepdim=True)
        # ties (bf16 logits repeat) make the ids a set question: the logits picked must be the same values
        same_vals = torch.equal(lf.gather(1, ids.long()), lf.gather(1, ref_ids))
        unique = bool((ids.sort(-1).values.diff(dim=-1) != 0).all())
        w_ok = torch.allclose(w, ref_w, atol=1e-5, rtol=1e-4)
        err = (w - ref_w).abs().max().item()
        return (
            same_vals and unique and w_ok,
            f"ids same logits {same_vals}, unique {unique}, max |dw| {err:.2e}",
        )

    return Spec(
        "topk_gating_kernel", topk_gating_kernel, rows // per, 1,
        {"op": "topk", "rows": rows, "cols": e, "k": k, "dtype": "bf16", "out_dtype": "fp32"},
        (logits, w, ids, rows), {"E": e, "K": k, "ROWS": per}, check,
    )  # fmt: skip


def _row_lse() -> Spec:
    rows, c, per = 1 << 20, 32, 32
    torch.manual_seed(1)
    x = torch.randn(rows, c, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(rows, device="cuda", dtype=torch.float32)

    def check() -> tuple[bool, str]:
        ref = torch.logsumexp(x.float(), -1)
        err = (out - ref).abs().max().item()
        return torch.allclose(out, ref, atol=1e-3, rtol=1e-4), f"max |d| {err:.2e}"

    return Spec(
        "row_lse_kernel", row_lse_kernel, rows // per, 4,
        {"op": "reduction", "rows": rows, "cols": c, "dtype": "bf16", "out_dtype": "fp32"},
        (x, out, rows), {"C": c, "ROWS": per}, check,
    )  # fmt: skip


def _rope() -> Spec:
    tok, h, d = 8192, 32, 128
    torch.manual_seed(2)
    x = torch.randn(tok, h, d, device="cuda", dtype=torch.bfloat16)
    wt = (1.0 + 0.1 * torch.randn(d, device="cuda")).to(torch.bfloat16)
    pos = torch.arange(tok, device="cuda", dtype=torch.int32)
    out = torch.empty_like(x)

    def check() -> tuple[bool, str]:
        xf = x.float()
        xn = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * wt.float()
        inv = torch.exp2(-(2.0 * torch.arange(d // 2, device="cuda").float() / d) * LOG2_BASE)
        ang = pos.float()[:, None] * inv[None, :]
        c, s = ang.cos()[:, None, :], ang.sin()[:, None, :]
        x0, x1 = xn[..., : d // 2], xn[..., d // 2 :]
        ref = torch.cat([x0 * c - x1 * s, x1 * c + x0 * s], -1)
        err = (out.float() - ref).abs().max().item()
        return torch.allclose(out.float(), ref, atol=3e-2, rtol=2e-2), f"max |d| {err:.2e}"

    return Spec(
        "qknorm_rope_kernel", qknorm_rope_kernel, tok, 4,
        {"op": "elementwise", "numel": tok * h * d, "inputs": 1, "outputs": 1, "dtype": "bf16"},
        (x, wt, pos, out, tok), {"H": h, "D": d, "TOK": 1, "LOG2_BASE": LOG2_BASE, "EPS": 1e-6}, check,
    )  # fmt: skip


SPECS = {"gating": _gating, "row_lse": _row_lse, "rope": _rope}


def _closure(name: str) -> Any:
    spec = SPECS[name]()
    spec.launch()
    return lambda: spec.launch()


def make_gating() -> Any:
    return _closure("gating")


def make_row_lse() -> Any:
    return _closure("row_lse")


def make_rope() -> Any:
    return _closure("rope")
