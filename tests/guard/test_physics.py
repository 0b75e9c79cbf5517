"""Physics: the roofline floor from cited wiki values only; impossible times rejected with the arithmetic,
times beyond 95 % of the attainable roof flagged, UNKNOWN peaks skipped with the reason."""

from __future__ import annotations

import re

import pytest

from kernelpilot.guard.models import Contract, RooflineSpec
from kernelpilot.guard.physics import check

GEMM = RooflineSpec(op="gemm", params={"m": "m", "n": "n", "k": "k"})
CITATION = re.compile(r"^[a-z0-9_]+: [0-9.]+ [A-Za-z/]+ <- gpu-wiki-index/[a-z0-9/_.-]+\.md:L[0-9]+$")


def _gemm(dtype: str = "bf16", n: int = 4096) -> Contract:
    shapes = [{"m": n, "n": n, "k": n}, {"m": 1000, "n": 777, "k": 1100}]
    return Contract(module="c.py", candidate="k.py:f", shapes=shapes, dtype=dtype, roofline=GEMM)


def test_a_time_under_the_floor_is_impossible_and_shows_the_arithmetic() -> None:
    got = check(_gemm(), 100.0, "NVIDIA H100 80GB HBM3")
    assert got.checked and got.gpu_id == "h100-sxm5"
    # 2 * 4096^3 FLOP / 989.4 TFLOP/s (bf16 dense, cited) = 138.9 us > the 3.35 TB/s memory time
    assert got.floor_us == pytest.approx(2 * 4096**3 / 989.4e12 * 1e6)
    assert got.rejection is not None and got.rejection.status == "rejected_impossible"
    ev = got.rejection.evidence
    assert "1.374e+11 FLOP / 989.4 TFLOP/s = 138.9 us" in ev and "measured 100 us" in ev
    assert "bf16_dense_tflops: 989.4 TFLOP/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L" in ev
    assert all(CITATION.match(c) for c in got.citations), got.citations


def test_a_time_beyond_95_percent_of_the_attainable_roof_is_flagged_not_rejected() -> None:
    # the attainable roof is the measured bf16 matmul ceiling: 1.374e11 / 783.9e12 = 175.3 us
    near = check(_gemm(), 177.7, "H100")
    assert near.rejection is None and near.flagged
    assert near.attainable_us == pytest.approx(2 * 4096**3 / 783.9e12 * 1e6)
    assert any(c.startswith("measured_bf16_matmul_tflops: 783.9 TFLOP/s <- ") for c in near.citations)


def test_a_kernel_near_but_under_the_roof_is_accepted_unflagged() -> None:
    ok = check(_gemm(), 200.0, "H100")  # 87.7 % of the attainable roof
    assert ok.checked and ok.rejection is None and not ok.flagged


def test_a_memory_bound_op_uses_the_bandwidth_floor() -> None:
    c = Contract(
        module="c.py", candidate="k.py:f", shapes=[{"n": 12_582_912}], dtype="fp32",
        roofline=RooflineSpec(op="elementwise", params={"numel": "n", "inputs": 2, "outputs": 1}),
    )  # fmt: skip
    got = check(c, 40.0, "H100")
    assert got.floor_us == pytest.approx(3 * 4 * 12_582_912 / 3.35e12 * 1e6)  # 45.07 us
    assert got.rejection is not None and "3.35 TB/s" in got.rejection.evidence
    assert got.attainable_us == pytest.approx(3 * 4 * 12_582_912 / 3.026e12 * 1e6)  # measured copy bandwidth
    assert not check(c, 60.0, "H100").flagged and check(c, 50.0, "H100").flagged


def test_an_unknown_peak_skips_the_check_and_says_so() -> None:
    got = check(_gemm("fp8"), 1.0, "T4")  # the T4 page has no fp8 tensor peak
    assert not got.checked and got.rejection is None
    assert "UNKNOWN" in got.skipped_why and "fp8_dense_tflops" in got.skipped_why
    assert "physics not checked" in got.skipped_why
    assert not check(_gemm(), 1.0, None).checked  # CPU timing: no GPU to hold it against
    unknown_gpu = check(_gemm(), 1.0, "Imaginary GPU 9000")
    assert not unknown_gpu.checked and "UNKNOWN" in unknown_gpu.skipped_why
    no_op = check(Contract(module="c.py", candidate="k.py:f", shapes=[{"n": 4}], dtype="fp32"), 1.0, "H100")
    assert not no_op.checked and "no roofline op" in no_op.skipped_why
