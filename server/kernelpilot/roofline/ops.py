"""FLOP and byte counting for common GPU ops (pure arithmetic, no hardware numbers).

Conventions: one multiply-add = 2 FLOPs; bytes = compulsory DRAM traffic (each operand read once,
each result written once, no re-reads), so the memory time is a lower bound. `s` is the input
element size, `so` the output element size (bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.roofline.errors import UnknownDtypeError

# Element sizes in bytes: properties of the number formats (IEEE 754 / OCP MX / NVIDIA TF32 spec),
# not of any GPU. tf32 is stored as fp32 in memory.
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int32": 4,
    "fp6": 0.75,
    "fp4": 0.5,
}
DTYPE_ALIASES: dict[str, str] = {
    "float64": "fp64",
    "double": "fp64",
    "f64": "fp64",
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "bfloat16": "bf16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "i8": "int8",
    "i32": "int32",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4_e2m1": "fp4",
    "mxfp6": "fp6",
}


def canonical_dtype(name: str, field: str = "dtype") -> str:
    key = name.strip().lower().replace("torch.", "")
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BYTES:
        raise UnknownDtypeError(
            f"--{field.replace('_', '-')}: unknown dtype {name!r}",
            f"use one of {', '.join(DTYPE_BYTES)} (aliases: {', '.join(sorted(DTYPE_ALIASES))})",
        )
    return key


@dataclass(frozen=True)
class OpCount:
    flops: float
    bytes: float
    matrix: bool
    description: str
    formula: str


def _pos(name: str, value: int | float | None, *, required: bool = True) -> float:
    if value is None:
        if required:
            raise InvalidArgumentError(
                f"--{name.replace('_', '-')} is required for this op", f"give --{name}"
            )
        return 0.0
    if value <= 0:
        raise InvalidArgumentError(
            f"--{name.replace('_', '-')} must be > 0, got {value}", "shapes and counts are positive"
        )
    return float(value)


def gemm(
    m: int | None, n: int | None, k: int | None, batch: int | None, s: float, so: float, accumulate: bool
) -> OpCount:
    """C[b] = A[b] (M×K) @ B[b] (K×N).

    FLOPs = 2·b·M·N·K; bytes = b·(M·K·s + K·N·s + M·N·so·(2 if C is read else 1)).
    """
    M, N, K = _pos("m", m), _pos("n", n), _pos("k", k)
    b = _pos("batch", batch) if batch is not None else 1.0
    flops = 2.0 * b * M * N * K
    nbytes = b * (M * K * s + K * N * s + M * N * so * (2 if accumulate else 1))
    desc = f"{'batched ' if b > 1 else ''}GEMM {f'b={b:.0f} ' if b > 1 else ''}M={M:.0f} N={N:.0f} K={K:.0f}"
    formula = "FLOPs = 2·b·M·N·K; bytes = b·(M·K·s_in + K·N·s_in + M·N·s_out" + ("·2)" if accumulate else ")")
    return OpCount(flops, nbytes, True, desc, formula)


def elementwise(
    numel: int | None, inputs: int, outputs: int, flops_per_element: float, s: float, so: float
) -> OpCount:
    """out = f(in_1..in_i) per element.

    FLOPs = numel·flops_per_element; bytes = numel·(inputs·s + outputs·so).
    """
    n = _pos("numel", numel)
    i = _pos("inputs", inputs)
    o = _pos("outputs", outputs)
    if flops_per_element < 0:
        raise InvalidArgumentError("--flops-per-element must be >= 0", "give FLOPs per element")
    return OpCount(
        n * flops_per_element,
        n * (i * s + o * so),
        False,
        f"elementwise numel={n:.0f} inputs={i:.0f} outputs={o:.0f}",
        "FLOPs = numel·flops_per_element; bytes = numel·(inputs·s_in + outputs·s_out)",
    )


def row_op(kind: str, rows: int | None, cols: int | None, numel: int | None, s: float, so: float) -> OpCount:
    """Row-wise ops on a rows×cols tensor, reduced along cols.

    - reduction (sum): FLOPs = rows·cols; bytes = rows·cols·s + rows·so.
    - softmax (max, subtract, exp, sum, divide; exp counted as 1 FLOP): FLOPs = 5·rows·cols;
      bytes = rows·cols·(s + so).
    - layernorm (mean, variance, normalize, scale+shift): FLOPs = 8·rows·cols;
      bytes = rows·cols·(s + so) + 2·cols·s (gamma, beta).
    - rmsnorm (square-sum, scale, gamma): FLOPs = 4·rows·cols; bytes = rows·cols·(s + so) + cols·s (gamma).
    """
    if rows is None and cols is None and numel is not None:
        rows, cols = 1, numel
    r, c = _pos("rows", rows), _pos("cols", cols)
    n = r * c
    if kind == "reduction":
        return OpCount(
            n,
            n * s + r * so,
            False,
            f"row sum rows={r:.0f} cols={c:.0f}",
            "FLOPs = rows·cols; bytes = rows·cols·s_in + rows·s_out",
        )
    if kind == "softmax":
        return OpCount(
            5 * n,
            n * (s + so),
            False,
            f"row softmax rows={r:.0f} cols={c:.0f}",
            "FLOPs = 5·rows·cols; bytes = rows·cols·(s_in + s_out)",
        )
    if kind == "layernorm":
        return OpCount(
            8 * n,
            n * (s + so) + 2 * c * s,
            False,
            f"layernorm rows={r:.0f} cols={c:.0f}",
            "FLOPs = 8·rows·cols; bytes = rows·cols·(s_in + s_out) + 2·cols·s_in",
        )
    if kind == "rmsnorm":
        return OpCount(
            4 * n,
            n * (s + so) + c * s,
            False,
            f"rmsnorm rows={r:.0f} cols={c:.0f}",
            "FLOPs = 4·rows·cols; bytes = rows·cols·(s_in + s_out) + cols·s_in",
        )
    raise InvalidArgumentError(f"unknown row op {kind!r}", "use reduction, softmax, layernorm or rmsnorm")


def causal_pairs(seq_q: float, seq_k: float) -> float:
    """Number of (query, key) pairs a bottom-right-aligned causal mask keeps.

    Query i (0-based) sees keys j <= i + (seq_k - seq_q). With off = seq_k - seq_q >= 0:
    sum_{i} (i + off + 1) = seq_q·(2·off + seq_q + 1)/2; with seq_q > seq_k the first rows see nothing and
    the sum is seq_k·(seq_k + 1)/2.
    """
    off = seq_k - seq_q
    if off >= 0:
        return seq_q * (2 * off + seq_q + 1) / 2
    return seq_k * (seq_k + 1) / 2


def attention(
    batch: int | None,
    heads: int | None,
    kv_heads: int | None,
    seq_q: int | None,
    seq_k: int | None,
    head_dim: int | None,
    causal: bool,
    s: float,
    so: float,
) -> OpCount:
    """Attention forward O = softmax(Q·Kᵀ/√d)·V, fused (FlashAttention style, scores never in DRAM).

    FLOPs = 4·B·H·P·D where P = Sq·Sk pairs (causal: `causal_pairs`), i.e. 2·P·D for Q·Kᵀ plus 2·P·D for P·V;
    softmax FLOPs are not counted (they run on the vector unit, ~5·B·H·P). bytes = Q + O + K + V =
    B·H·Sq·D·(s + so) + 2·B·Hkv·Sk·D·s.
    """
    b = _pos("batch", batch) if batch is not None else 1.0
    h = _pos("heads", heads)
    hkv = _pos("kv_heads", kv_heads) if kv_heads is not None else h
    sq = _pos("seq_q", seq_q)
    sk = _pos("seq_k", seq_k) if seq_k is not None else sq
    d = _pos("head_dim", head_dim)
    pairs = causal_pairs(sq, sk) if causal else sq * sk
    flops = 4.0 * b * h * pairs * d
    nbytes = b * h * sq * d * (s + so) + 2.0 * b * hkv * sk * d * s
    desc = f"attention fwd B={b:.0f} H={h:.0f} Hkv={hkv:.0f} Sq={sq:.0f} Sk={sk:.0f} D={d:.0f}" + (
        " causal" if causal else ""
    )
    formula = (
        "FLOPs = 4·B·H·P·D, P = "
        + ("Sq·(2·(Sk−Sq)+Sq+1)/2 causal pairs" if causal else "Sq·Sk")
        + "; bytes = B·H·Sq·D·(s_in+s_out) + 2·B·Hkv·Sk·D·s_in"
    )
    return OpCount(flops, nbytes, True, desc, formula)


def topk(rows: int | None, cols: int | None, k: int | None, s: float, so: float) -> OpCount:
    """Row-wise selection (top-k, MoE gating): read rows×cols scores, write k values and k int32 ids per row.

    FLOPs = 0: compares, shuffles and the softmax of a gating op are integer/issue work, not the FLOP roof
    (the instruction-issue floor, `--isa` / `--ncu-csv`, bounds them).
    bytes = rows·cols·s_in + rows·k·(s_out + 4).
    """
    r, c, kk = _pos("rows", rows), _pos("cols", cols), _pos("k", k)
    if kk > c:
        raise InvalidArgumentError(
            f"--k {kk:.0f} is larger than --cols {c:.0f}", "select at most cols per row"
        )
    return OpCount(
        0.0,
        r * c * s + r * kk * (so + 4),
        False,
        f"top-k selection rows={r:.0f} cols={c:.0f} k={kk:.0f}",
        "FLOPs = 0 (selection: see the issue floor); "
        "bytes = rows·cols·s_in + rows·k·(s_out + 4 for int32 ids)",
    )
