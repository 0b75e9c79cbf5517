"""Four Triton kernels for bench/issue_bound.py (issue 32: the instruction-issue floor).

Each is straight-line code (no loops: `tl.static_range` unrolls), so the static count of the code object
(`kernelpilot isa mix`) times the warps launched is what a warp issues, and ncu's counters can be set
beside it. Compiled for sm_90 by Triton 3.6 on a CPU host (`python bench/issue_bound_offline.py`: Triton's
own ptxas, `GPUTarget("cuda", 90, 32)`, pointers and sizes marked 16-divisible as the launcher does; this
reproduced the first H100 run's cubins instruction for instruction), floors on the H100 SXM5 wiki rates:
- `topk_gating_kernel` ROWS=8, 1 warp: 2903 instr per warp (alu 2227): 65536 rows -> alu pipe 34.9 µs
  (binds), memory 6.3 µs (issue-bound);
- `row_logsumexp_entropy_kernel` C=32, ROWS=16, 4 warps: 139 instr: 1M rows -> issue 34.9 µs (binds),
  memory 22.5 µs (issue-bound, 1.55x);
- `row_sort_kernel` C=64, ROWS=16, 4 warps (bitonic `tl.sort`: shuffles and compare-selects): 678 instr:
  256K rows -> issue 42.5 µs (binds; alu 41.3), memory 20.0 µs (issue-bound, 2.1x);
- `qknorm_rope_kernel` TOK=1, 4 warps: 759 instr: 8192 tokens x 32 heads x 128 -> issue 23.8 µs, memory
  40.1 µs (memory-bound: the example where the floor picks memory).
The `make_*` factories are `kernelpilot time` specs (bench/issue_bound_kernels.py:make_gating); `SPECS`
holds each kernel's launch, inputs and torch reference for the driver; `OFFLINE` the signatures and
constants for the offline compile (no torch, no GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

LOG2_BASE = math.log2(10000.0)
GATING_ROWS, LSE_ROWS, SORT_ROWS, ROPE_TOK = 65536, 1 << 20, 1 << 18, 8192


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
def row_logsumexp_entropy_kernel(x_ptr, lse_ptr, ent_ptr, n_rows, C: tl.constexpr, ROWS: tl.constexpr):
    """log-sum-exp and entropy of the softmax of each row of C bf16 values (a sampler's or a calibration
    metric's per-row statistics): one max and two sum shuffle reductions per row; entropy
    H = lse - sum(p x) = log(s) - sum(e d) / s with d = x - max, e = exp(d), s = sum(e)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, C)
    rmask = rows < n_rows
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
    m = tl.max(x, axis=1)
    d = x - m[:, None]
    e = tl.exp(d)
    s = tl.sum(e, axis=1)
    t = tl.sum(e * d, axis=1)
    ls = tl.log(s)
    tl.store(lse_ptr + rows, m + ls, mask=rmask)
    tl.store(ent_ptr + rows, ls - t / s, mask=rmask)


@triton.jit
def row_sort_kernel(x_ptr, out_ptr, n_rows, C: tl.constexpr, ROWS: tl.constexpr):
    """Each row of C bf16 values sorted ascending (per-row ranking before a top-p cut, a sorted bucket):
    `tl.sort` is a bitonic network, log2(C)(log2(C)+1)/2 compare-exchange stages of xor shuffles and
    compare-selects; bytes are one read and one write of the rows."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, C)
    rmask = rows < n_rows
    off = rows[:, None] * C + cols[None, :]
    x = tl.load(x_ptr + off, mask=rmask[:, None], other=0.0)
    tl.store(out_ptr + off, tl.sort(x, dim=1), mask=rmask[:, None])


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


def _spec(name: str, args: tuple[Any, ...], check: Any) -> Spec:
    """The launch constants, grid, warps and roofline op of OFFLINE[name], with this run's tensors."""
    kernel, _sig, consts, warps, grid, op = OFFLINE[name]
    return Spec(kernel.__name__, kernel, grid, warps, op, args, consts, check)


def _gating() -> Spec:
    rows, e, k = GATING_ROWS, 128, 8
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

    return _spec("gating", (logits, w, ids, rows), check)


def _row_lse() -> Spec:
    rows, c = LSE_ROWS, 32
    torch.manual_seed(1)
    x = torch.randn(rows, c, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(rows, device="cuda", dtype=torch.float32)
    ent = torch.empty(rows, device="cuda", dtype=torch.float32)

    def check() -> tuple[bool, str]:
        xf = x.float()
        ref_lse = torch.logsumexp(xf, -1)
        logp = torch.log_softmax(xf, -1)
        ref_ent = -(logp.exp() * logp).sum(-1)
        e1, e2 = (lse - ref_lse).abs().max().item(), (ent - ref_ent).abs().max().item()
        ok = torch.allclose(lse, ref_lse, atol=1e-3, rtol=1e-4) and torch.allclose(ent, ref_ent, atol=1e-3)
        return ok, f"max |d lse| {e1:.2e}, max |d entropy| {e2:.2e}"

    return _spec("row_lse", (x, lse, ent, rows), check)


def _row_sort() -> Spec:
    rows, c = SORT_ROWS, 64
    torch.manual_seed(3)
    x = torch.randn(rows, c, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)

    def check() -> tuple[bool, str]:
        ref = torch.sort(x, dim=-1).values
        bad = (out != ref).any(-1).sum().item()
        return bad == 0, f"rows differing from torch.sort: {bad} of {rows}"

    return _spec("row_sort", (x, out, rows), check)


def _rope() -> Spec:
    tok, h, d = ROPE_TOK, 32, 128
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

    return _spec("rope", (x, wt, pos, out, tok), check)


SPECS = {"gating": _gating, "row_lse": _row_lse, "row_sort": _row_sort, "rope": _rope}

# name -> (kernel, Triton signature of the runtime arguments, constexprs, num_warps, grid, roofline op): what
# the SPECS factories launch (via _spec) and what bench/issue_bound_offline.py compiles without a GPU
OFFLINE: dict[str, tuple[Any, dict[str, str], dict[str, Any], int, int, dict[str, Any]]] = {
    "gating": (
        topk_gating_kernel,
        {"logits_ptr": "*bf16", "w_ptr": "*fp32", "ids_ptr": "*i32", "n_rows": "i32"},
        {"E": 128, "K": 8, "ROWS": 8}, 1, GATING_ROWS // 8,
        {"op": "topk", "rows": GATING_ROWS, "cols": 128, "k": 8, "dtype": "bf16", "out_dtype": "fp32"},
    ),
    "row_lse": (
        row_logsumexp_entropy_kernel,
        {"x_ptr": "*bf16", "lse_ptr": "*fp32", "ent_ptr": "*fp32", "n_rows": "i32"},
        {"C": 32, "ROWS": 16}, 4, LSE_ROWS // 16,
        # two fp32 results per row: the reduction op counts one, so the bytes are given directly
        {"flops": 6.0 * LSE_ROWS * 32, "bytes_moved": LSE_ROWS * (2 * 32 + 8), "dtype": "bf16",
         "out_dtype": "fp32"},
    ),
    "row_sort": (
        row_sort_kernel,
        {"x_ptr": "*bf16", "out_ptr": "*bf16", "n_rows": "i32"},
        {"C": 64, "ROWS": 16}, 4, SORT_ROWS // 16,
        {"op": "elementwise", "numel": SORT_ROWS * 64, "inputs": 1, "outputs": 1, "dtype": "bf16"},
    ),
    "rope": (
        qknorm_rope_kernel,
        {"x_ptr": "*bf16", "w_ptr": "*bf16", "pos_ptr": "*i32", "out_ptr": "*bf16", "n_tok": "i32"},
        {"H": 32, "D": 128, "TOK": 1, "LOG2_BASE": LOG2_BASE, "EPS": 1e-6}, 4, ROPE_TOK,
        {"op": "elementwise", "numel": ROPE_TOK * 32 * 128, "inputs": 1, "outputs": 1, "dtype": "bf16"},
    ),
}  # fmt: skip


def _closure(name: str) -> Any:
    spec = SPECS[name]()
    spec.launch()
    return lambda: spec.launch()


def make_gating() -> Any:
    return _closure("gating")


def make_row_lse() -> Any:
    return _closure("row_lse")


def make_row_sort() -> Any:
    return _closure("row_sort")


def make_rope() -> Any:
    return _closure("rope")
