"""Kernel categories from declared name rules: the first rule whose pattern matches the name wins.

The rules read the name as the trace printed it (mangled or demangled); each is a case-insensitive regex.
Order matters: the loss (log-softmax, cross-entropy, NLL) before attention, attention before GEMM (flash
kernels contain "gemm"-like words), normalization before reduction (layer-norm kernels are reductions too),
communication before copies. Tested on names recorded from PyTorch on an H100 and an MI350X
(tests/workload/test_categories.py).
"""

from __future__ import annotations

import re

# (rule name, category, pattern)
RULES: tuple[tuple[str, str, str], ...] = (
    ("nccl/rccl collective", "communication", r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|alltoall"),
    # the loss before attention: a log-softmax kernel is a softmax by name (cunn_SoftMaxForward<LogSoftMax>)
    ("loss kernel", "loss", r"log_?softmax|cross_?entropy|nll_?loss|softmax_?cross|ce_?loss"),
    (
        "attention kernel",
        "attention",
        r"flash|fmha|attn|attention|sdpa|softmax_?warp|mha_|paged_?kv|decode_?kernel",
    ),
    ("softmax", "attention", r"softmax"),
    (
        "norm kernel",
        "normalization",
        r"layer_?norm|rms_?norm|group_?norm|batch_?norm|instance_?norm|rsqrt|welford",
    ),
    (
        "GEMM library / MMA",
        "gemm",
        r"gemm|cutlass|cublas|sm\d+_xmma|xmma_|\bmatmul|_mm_|hgemm|sgemm|wgmma|nvjet|ck::.*gemm|"
        r"Cijk_|_mfma|hipblaslt|convolution|conv[123]d|implicit_?gemm|triton_.*mm",
    ),
    (
        "copy / fill",
        "copy_memset",
        r"memcpy|memset|copybuffer|fillbuffer|copy_kernel|fillfunctor|transpose|\bcopy_|_copy\b|cat_?array|index_?put|scatter_?gather|unrolled_elementwise_kernel.*copy",
    ),
    (
        "reduction",
        "reduction",
        r"reduce|reduction|sum_functor|argmax|argmin|topk|sort|scan|cumsum|norm_?two|meanops|maxnan|minnan",
    ),
    (
        "elementwise",
        "elementwise",
        r"elementwise|vectorized|functor|pointwise|triton_poi|activation|silu|gelu|relu|add_kernel|vector_add|mul_kernel|distribution|rand|fill|clamp",
    ),
)
_COMPILED = tuple((rule, cat, re.compile(pat, re.I)) for rule, cat, pat in RULES)


def categorize(name: str, kind: str = "kernel") -> tuple[str, str]:
    """(category, rule name) of a kernel name; copies and fills recorded as such are copy_memset."""
    if kind in ("memcpy", "memset"):
        return "copy_memset", f"device {kind}"
    for rule, cat, rx in _COMPILED:
        if rx.search(name):
            return cat, rule
    return "other", "no rule matched"
