"""Issue 44's triage on the recorded H100 decode trace: one row per (kernel, launching op shape), each hot
row's floor computed from its shapes equal to `kernelpilot roofline` on the same op, headroom ranked with
`workload isolate` as its next step, and the launch-overhead saving labelled an upper bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.roofline.core import analyze
from kernelpilot.roofline.models import RooflineRequest
from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest, WorkloadResult
from kernelpilot.workload.opportunities import _profiler_bound
from kernelpilot.workload.readers.detect import read_trace
from kernelpilot.workload.views import render_html

TRACE = Path(__file__).resolve().parent.parent / "fixtures" / "workload" / "h100_decode_trace.json"


@pytest.fixture(scope="module")
def decode() -> WorkloadResult:
    return read_workload(WorkloadReadRequest(path=str(TRACE)))


def test_no_row_holds_two_shapes(decode: WorkloadResult) -> None:
    rows = {(k.name, k.shape_op, k.input_shapes): k for k in decode.kernels}
    assert len(rows) == len(decode.kernels)
    launches: dict[tuple[str, str | None, str | None], int] = {}
    for a in read_trace(TRACE).activities:
        key = (a.name, a.op, json.dumps(a.shapes, separators=(",", ":")) if a.shapes is not None else None)
        assert key in rows, key  # every launch lands in the row of its own shape
        launches[key] = launches.get(key, 0) + 1
    for key, k in rows.items():
        assert launches[key] == k.launches_per_step * 3
    gemm = [k for k in decode.kernels if k.name == "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"]
    assert {k.short_name.split(" @")[1] for k in gemm} == {
        "8x1024,1024x2816",
        "8x1024,1024x3072",
        "8x1024,1024x1024",
    }


def test_a_hot_rows_floor_is_the_roofline_of_its_recorded_op(decode: WorkloadResult) -> None:
    k = next(k for k in decode.kernels if k.input_shapes == "[[8,1024],[1024,2816]]")
    t = k.trace_roofline or {}
    assert t["basis"] == "computed from the trace's shapes and the cited specs, not measured"
    ref = analyze(RooflineRequest(gpu="NVIDIA H100 80GB HBM3", op="gemm", m=8, n=2816, k=1024, dtype="bf16"))
    assert t["work_floor_us"] == pytest.approx(ref.time_floor_us) and t["bytes"] == ref.bytes
    assert t["bound"] == "memory" and t["floor_us"] == pytest.approx(ref.time_floor_us)
    assert t["share_of_floor"] == pytest.approx(ref.time_floor_us / k.launch.median_us)
    assert t["headroom_us_per_step"] == pytest.approx(k.us_per_step * (1 - t["share_of_floor"]))
    assert t["roofline_args"] == {"op": "gemm", "m": 8, "n": 2816, "k": 1024, "dtype": "bf16"}


def test_tiny_kernels_get_the_latency_floor_not_nanoseconds(decode: WorkloadResult) -> None:
    rsqrt = next(k for k in decode.kernels if k.shape_op == "aten::rsqrt")
    t = rsqrt.trace_roofline or {}
    assert t["work_floor_us"] < 0.01 and t["bound"] == "latency"
    assert t["floor_us"] == min(k.launch.min_us for k in decode.kernels) and t["floor_us"] > 1.0
    assert "unmeasured" in t["latency_floor"] and "ceilings measure" in t["latency_floor"]


def test_headroom_ranks_beside_launch_overhead_and_names_isolate(decode: WorkloadResult) -> None:
    kinds = [o.kind for o in decode.opportunities]
    assert {"headroom", "launch_overhead", "fusion"} <= set(kinds)
    head = [o for o in decode.opportunities if o.kind == "headroom"]
    assert all("not measured" in o.title for o in head)
    savings = [o.saving_us_per_step for o in decode.opportunities]
    assert savings == sorted(savings, reverse=True)
    top = head[0]
    assert top.next_command.startswith(f"kernelpilot workload isolate {TRACE} --kernel ")
    row = int(top.next_command.split("--kernel ")[1].split()[0])
    assert decode.kernels[row - 1].short_name == top.kernels[0]


def test_launch_overhead_is_labelled_an_upper_bound(decode: WorkloadResult) -> None:
    launch = next(o for o in decode.opportunities if o.kind == "launch_overhead")
    assert any(e.startswith("upper bound: measured under the profiler") for e in launch.evidence)
    assert any("confirm without the tracer" in e for e in launch.evidence)
    step = decode.step.model_copy(update={"event_step_us": decode.step.wall_us - 135 * 2.0})
    assert "added about 2.00 µs per launch" in _profiler_bound(step)


def test_shapes_in_text_json_and_html(decode: WorkloadResult) -> None:
    text = decode.render_text()
    assert "mm 8x1024,1024x2816" in text and "of roof (trace)" in text
    assert json.loads(decode.model_dump_json())["kernels"][1]["input_shapes"]
    assert "mm 8x1024,1024x3072" in render_html(decode)


def test_a_name_split_over_shapes_is_drilled_once(decode: WorkloadResult) -> None:
    from kernelpilot.workload.core import _one_row_per_name

    res = decode.model_copy(deep=True)
    hot = [k for k in res.kernels if k.hot]
    kept = _one_row_per_name(res, hot)
    gemm = [k for k in hot if k.name == "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"]
    assert len(gemm) == 3 and [k for k in kept if k.name == gemm[0].name] == [gemm[0]]
    assert len(kept) == len(hot) - 2 and len(res.drill_failures) == 2
    assert all("ncu profiles one launch per kernel name" in f for f in res.drill_failures)
