"""The roofline model of a recorded ATen op: `kernelpilot roofline` arguments from its input dims and types.

Why here and torch-free: the triage (`workload.trace_roofline`) places each hot kernel row on the roofline
from the shapes the trace recorded, and `workload isolate` hands the same arguments to `workspace init`;
both count through `roofline.ops`, so a row's floor is the one `kernelpilot roofline` prints for them.
Ops the catalogue models: GEMM (mm, addmm, bmm), attention (scaled_dot_product_attention and the backend
ops under it), normalization (layer norm, RMSNorm), softmax, elementwise (pointwise math and dtype copies)
and row reductions (sum, mean, amax). Anything else has no model (None), said so where it is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.roofline import ops

# `Input type` of PyTorch's profiler -> the roofline's dtype name (integer index tensors have no FLOP roof)
ROOFLINE_DTYPES = {
    "float": "fp32",
    "double": "fp64",
    "c10::Half": "fp16",
    "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "signed char": "int8",
    "int": "int32",
}
GEMM_OPS = {"aten::mm": 0, "aten::addmm": 1, "aten::bmm": 0, "aten::baddbmm": 1}  # op -> index of A
ATTENTION_OPS = {  # op -> index of its is_causal argument in the schema
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 3,
    "aten::_scaled_dot_product_efficient_attention": 5,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_cudnn_attention_forward": 10,
    "aten::_flash_attention_forward": 7,
    "aten::_efficient_attention_forward": 9,
}
ELEMENTWISE_OPS = {
    "aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div",
    "aten::div_", "aten::pow", "aten::rsqrt", "aten::sqrt", "aten::exp", "aten::neg", "aten::silu",
    "aten::silu_", "aten::gelu", "aten::sigmoid", "aten::tanh", "aten::relu", "aten::relu_", "aten::copy_",
    "aten::_to_copy", "aten::clone", "aten::where", "aten::addcmul", "aten::addcdiv", "aten::lerp",
    "aten::reciprocal", "aten::abs", "aten::cos", "aten::sin", "aten::maximum", "aten::minimum",
    "aten::masked_fill", "aten::masked_fill_", "aten::fill_", "aten::zero_", "aten::cat",
}  # fmt: skip
REDUCTION_OPS = {"aten::sum", "aten::mean", "aten::amax", "aten::amin", "aten::max", "aten::norm"}
NORM_OPS = {
    "aten::native_layer_norm": "layernorm",
    "aten::_fused_rms_norm": "rmsnorm",
    "aten::rms_norm": "rmsnorm",
}
SOFTMAX_OPS = {"aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax"}


@dataclass(frozen=True)
class OpModel:
    """An op's FLOPs and compulsory bytes, and the `kernelpilot roofline` arguments that count them."""

    kind: str  # gemm | attention | normalization | softmax | elementwise | reduction
    dtype: str
    out_dtype: str
    args: dict[str, Any]  # roofline fields: op and its sizes (dtype/out_dtype beside)
    flops: float
    bytes: float
    matrix: bool
    description: str
    formula: str
    note: str | None = None


def _tensors(dims: list[Any], types: list[str]) -> list[tuple[int, list[int], str]]:
    """(index, dims, roofline dtype or '') of each tensor input with whole, non-negative sizes."""
    out = []
    for i, (d, t) in enumerate(zip(dims, types, strict=False)):
        if isinstance(d, list) and all(type(x) is int and x >= 0 for x in d) and t in _ALL_TENSOR_TYPES:
            out.append((i, d, ROOFLINE_DTYPES.get(t, "")))
    return out


_ALL_TENSOR_TYPES = {*ROOFLINE_DTYPES, "long int", "bool", "short int", "unsigned char"}


def _bool_at(concrete: list[str], i: int) -> bool:
    return i < len(concrete) and concrete[i] in ("True", "1", "true")


def _model(
    kind: str, count: ops.OpCount, dtype: str, out: str, args: dict[str, Any], note: str | None = None
) -> OpModel:
    return OpModel(
        kind, dtype, out, args, count.flops, count.bytes, count.matrix, count.description, count.formula, note
    )


def _gemm(name: str, t: list[tuple[int, list[int], str]]) -> OpModel | None:
    a_idx = GEMM_OPS[name]
    mats = [x for x in t if x[0] >= a_idx][:2]
    if len(mats) < 2 or not mats[0][2]:
        return None
    (_, a, dt), (_, b, _) = mats
    if name in ("aten::mm", "aten::addmm") and len(a) == 2 and len(b) == 2:
        m, k, n = a[0], a[1], b[1]
        return _model(
            "gemm",
            ops.gemm(m, n, k, None, _S[dt], _S[dt], False),
            dt,
            dt,
            {"op": "gemm", "m": m, "n": n, "k": k},
        )
    if len(a) == 3 and len(b) == 3:
        bt, m, k, n = a[0], a[1], a[2], b[2]
        args = {"op": "bmm", "batch": bt, "m": m, "n": n, "k": k}
        return _model("gemm", ops.gemm(m, n, k, bt, _S[dt], _S[dt], False), dt, dt, args)
    return None


_S = ops.DTYPE_BYTES


def _attention(name: str, t: list[tuple[int, list[int], str]], concrete: list[str]) -> OpModel | None:
    qkv = [x for x in t if len(x[1]) == 4][:3]
    if len(qkv) < 3 or not qkv[0][2]:
        return None
    (_, q, dt), (_, k, _), _ = qkv
    b, h, sq, d = q
    causal = _bool_at(concrete, ATTENTION_OPS[name])
    args = {
        "op": "attention",
        "batch": b,
        "heads": h,
        "kv_heads": k[1],
        "seq_q": sq,
        "seq_k": k[2],
        "head_dim": d,
        "causal": causal,
    }
    count = ops.attention(b, h, k[1], sq, k[2], d, causal, _S[dt], _S[dt])
    return _model("attention", count, dt, dt, args)


def _elementwise(name: str, t: list[tuple[int, list[int], str]]) -> OpModel | None:
    """Pointwise: the output has the broadcast shape of the tensor inputs; an in-place copy writes input 0
    from input 1 (dtype copies: read in one dtype, written in another)."""
    typed = [x for x in t if x[2]]
    if not typed:
        return None
    numel = max(math.prod(x[1]) for x in typed)
    if numel == 0:
        return None
    if name == "aten::copy_" and len(typed) >= 2:
        dst, src = typed[0][2], typed[1][2]
        count = ops.elementwise(numel, 1, 1, 0.0, _S[src], _S[dst])
        return _model(
            "elementwise",
            count,
            src,
            dst,
            {"op": "elementwise", "numel": numel, "inputs": 1, "outputs": 1, "flops_per_element": 0},
        )
    full = [x for x in typed if math.prod(x[1]) == numel]
    small = len(typed) - len(full)
    dt = full[0][2]
    count = ops.elementwise(numel, len(full), 1, 1.0, _S[dt], _S[dt])
    note = f"{small} broadcast input(s) smaller than the output left out of the bytes" if small else None
    args = {"op": "elementwise", "numel": numel, "inputs": len(full), "outputs": 1, "flops_per_element": 1}
    return _model("elementwise", count, dt, dt, args, note)


def _reduced(dims: list[int], concrete: list[str], at: int) -> tuple[int, int] | None:
    """(rows, cols) of a reduction over the dims listed at argument `at` (all dims when none are)."""
    import json

    numel = math.prod(dims)
    red: list[int] = []
    if at < len(concrete) and concrete[at].startswith("["):
        try:
            red = [int(x) for x in json.loads(concrete[at])]
        except (ValueError, TypeError):
            return None
    if not red:
        return 1, numel
    try:
        cols = math.prod(dims[r] for r in red)
    except IndexError:
        return None
    return (numel // cols if cols else 0), cols


def _row(name: str, t: list[tuple[int, list[int], str]], concrete: list[str]) -> OpModel | None:
    if not t or not t[0][2] or not t[0][1]:
        return None
    x, dt = t[0][1], t[0][2]
    if name in NORM_OPS:
        kind = NORM_OPS[name]
        norm = t[1][1] if len(t) > 1 and name != "aten::native_layer_norm" else None
        cols = math.prod(norm) if norm else x[-1]
        rows = math.prod(x) // cols if cols else 0
        count = ops.row_op(kind, rows, cols, None, _S[dt], _S[dt])
        return _model("normalization", count, dt, dt, {"op": kind, "rows": rows, "cols": cols})
    if name in SOFTMAX_OPS:
        cols = x[int(concrete[1]) if len(concrete) > 1 and concrete[1].lstrip("-").isdigit() else -1]
        rows = math.prod(x) // cols if cols else 0
        count = ops.row_op("softmax", rows, cols, None, _S[dt], _S[dt])
        return _model("softmax", count, dt, dt, {"op": "softmax", "rows": rows, "cols": cols})
    rc = _reduced(x, concrete, 1)
    if rc is None or rc[0] <= 0 or rc[1] <= 0:
        return None
    rows, cols = rc
    count = ops.row_op("reduction", rows, cols, None, _S[dt], _S[dt])
    return _model("reduction", count, dt, dt, {"op": "reduction", "rows": rows, "cols": cols})


def model_of(name: str, dims: Any, types: Any, concrete: Any = None) -> OpModel | None:
    """The roofline model of one recorded op call, or None when the catalogue has none for it."""
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    t = _tensors(dims, [str(x) for x in types])
    conc = [str(c) for c in concrete] if isinstance(concrete, list) else []
    try:
        if name in GEMM_OPS:
            return _gemm(name, t)
        if name in ATTENTION_OPS:
            return _attention(name, t, conc)
        if name in ELEMENTWISE_OPS:
            return _elementwise(name, t)
        if name in REDUCTION_OPS or name in NORM_OPS or name in SOFTMAX_OPS:
            return _row(name, t, conc)
    except (KernelpilotError, IndexError, ValueError):  # a size of 0 or a shape the op cannot have
        return None
    return None
