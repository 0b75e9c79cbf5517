"""Per-kernel attribution from a real torch.profiler Chrome trace recorded on the device H100."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.timing.errors import NoGpuWorkError
from kernelpilot.timing.kernels import parse_trace

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "timing" / "three_kernels_trace.json"


def test_three_kernels_are_named_with_their_time_per_call() -> None:
    att = parse_trace(json.loads(TRACE.read_text()), calls=10)
    names = [k.name for k in att.kernels]
    assert len(names) == 3
    assert "vectorized_layer_norm_kernel" in names[0]
    assert "cunn_SoftMaxForward" in names[1]
    assert "vectorized_elementwise_kernel" in names[2]
    assert all(k.launches_per_call == 1 for k in att.kernels)
    per_call = [k.duration_us_per_call for k in att.kernels]
    assert per_call == sorted(per_call, reverse=True)
    assert att.kernel_sum_us_per_call == pytest.approx(sum(per_call))
    assert 150 < att.kernel_sum_us_per_call < 220  # 182.7 us in the bench log beside this trace
    assert sum(k.share for k in att.kernels) == pytest.approx(1.0)


def test_a_trace_without_device_work_is_a_typed_error() -> None:
    trace = json.loads(TRACE.read_text())
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "kernel"]
    with pytest.raises(NoGpuWorkError, match="no GPU work"):
        parse_trace(trace, calls=10)
    with pytest.raises(NoGpuWorkError):
        parse_trace({"traceEvents": "garbage"}, calls=1)  # type: ignore[dict-item]


def test_the_recorded_bench_meets_the_stated_figures() -> None:
    """The bench output recorded on the device: per-kernel sum within 2 % of the warm total, cost <= 1 s."""
    rec = json.loads((TRACE.parent / "timing_vs_ncu_h100.json").read_text())
    three = rec["three"]
    warm = three["warm"]["stats"]["median"]
    assert abs(three["kernels"]["kernel_sum_us_per_call"] - warm) / warm < 0.02
    assert sorted(rec["cost_s"])[1] <= 1.0
    assert all(max(r["kp_cold_cv"], r["kp_warm_cv"]) <= 0.02 for r in rec["rows"])
