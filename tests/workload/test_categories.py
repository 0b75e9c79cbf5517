"""Category rules on kernel names recorded from real runs (MI350X rocprofv3, H100 Kineto fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.workload.categories import RULES, categorize
from kernelpilot.workload.readers.detect import read_trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _names(path: Path) -> list[str]:
    t = read_trace(path)
    return list(dict.fromkeys([a.name for a in t.activities] or [g.name for g in t.aggregates]))


def test_every_mi350x_kernel_gets_the_category_its_work_belongs_to():
    got = {
        n.split("<")[0].split("(")[0][-45:]: categorize(n)[0]
        for n in _names(FIXTURES / "workload/mi350x_flash_attn_kernel_stats.csv")
    }
    assert got["flash_attn_func_kernel_0"] == "attention"
    assert got["attn_fwd"] == "attention"
    assert got["__amd_rocclr_copyBuffer"] == "copy_memset"
    assert got["__amd_rocclr_fillBufferAligned"] == "copy_memset"
    assert got["void at::native::reduce_kernel"] == "reduction"
    names = _names(FIXTURES / "workload/mi350x_flash_attn_kernel_stats.csv")
    by = {n: categorize(n)[0] for n in names}
    assert by[next(n for n in names if "CUDAFunctor_add" in n)] == "elementwise"
    assert by[next(n for n in names if "bfloat16_copy_kernel_cuda" in n)] == "copy_memset"
    assert by[next(n for n in names if "FillFunctor<int>" in n)] == "copy_memset"
    assert by[next(n for n in names if "MeanOps" in n)] == "reduction"
    assert all(c != "other" for c in by.values())


def test_h100_three_kernels():
    cats = [categorize(n)[0] for n in _names(FIXTURES / "timing/three_kernels_trace.json")]
    assert cats == ["elementwise", "attention", "normalization"]


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("Memcpy DtoD (Device -> Device)", "copy_memset"),
        ("void at::native::convert_kernel<float>(float*)", "other"),  # 'convert' is not a convolution
    ],
)
def test_rule_edges(name: str, category: str):
    assert categorize(name)[0] == category


def test_device_copies_are_copies_whatever_their_name():
    assert categorize("Memset (Device)", "memset") == ("copy_memset", "device memset")
    assert {cat for _, cat, _ in RULES} <= {
        "gemm",
        "attention",
        "loss",
        "normalization",
        "elementwise",
        "reduction",
        "copy_memset",
        "communication",
    }


@pytest.mark.parametrize(
    "name",
    [
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
        "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
        "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>"
        "(float*, float const*, float const*, long)",
        "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>"
        "(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
        "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>"
        "(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)",
        "triton_per_fused__log_softmax_nll_loss_forward_0",
        "cross_entropy_fwd_kernel",
    ],
)
def test_loss_kernels_are_loss_not_attention(name: str):
    """The recorded training step's loss kernels (h100_train_trace.json) and fused Triton/flash-attn ones."""
    assert categorize(name) == ("loss", "loss kernel")
    # a plain softmax (attention's) stays attention
    assert categorize("void at::native::cunn_SoftMaxForward<4, float, float, float, SoftMaxForwardEpilogue>")[
        0
    ] == ("attention")
