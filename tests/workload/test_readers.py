"""Readers on real tool output: rocprofv3 kernel trace vs its own stats, Kineto traces; bad input is typed."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.workload.core import read_workload
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.models import WorkloadReadRequest
from kernelpilot.workload.readers.detect import read_trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

WL = FIXTURES / "workload"
TRACE = WL / "mi350x_flash_attn_kernel_trace.csv"
STATS = WL / "mi350x_flash_attn_kernel_stats.csv"


def test_mi350x_trace_equals_rocprofv3_own_stats_per_kernel():
    res = read_workload(WorkloadReadRequest(path=str(TRACE)))
    with STATS.open() as fh:
        stats = {r["Name"]: r for r in csv.DictReader(fh)}
    assert len(res.kernels) == len(stats) == 19
    for k in res.kernels:
        row = stats[k.name]
        assert k.launches_per_step == int(row["Calls"])
        assert round(k.us_per_step * 1000) == int(row["TotalDurationNs"])
        assert round(k.launch.min_us * 1000) == int(row["MinNs"])
        assert round(k.launch.max_us * 1000) == int(row["MaxNs"])
        assert k.share == pytest.approx(float(row["Percentage"]) / 100, abs=6e-5)
    assert res.kernels[0].name == "flash_attn_func_kernel_0" and res.kernels[0].category == "attention"
    assert res.kernels[-1].cumulative_share == pytest.approx(1.0)
    assert res.format == "rocprof_trace" and res.step.steps == 1


def test_stats_table_reads_into_the_same_model():
    a = read_workload(WorkloadReadRequest(path=str(TRACE)))
    b = read_workload(WorkloadReadRequest(path=str(STATS)))
    assert b.format == "rocprof_stats" and b.step.wall_us is None
    assert [(k.name, k.launches_per_step) for k in a.kernels] == [
        (k.name, k.launches_per_step) for k in b.kernels
    ]
    for x, y in zip(a.kernels, b.kernels, strict=True):
        assert x.us_per_step == pytest.approx(y.us_per_step, abs=1e-6)


def test_rocprof_trace_without_launch_calls_claims_no_launch_overhead():
    res = read_workload(WorkloadReadRequest(path=str(TRACE)))
    assert all(o.kind != "launch_overhead" for o in res.opportunities)
    assert res.step.launch_bound_gap_us is None


def test_kineto_device_only_trace_with_declared_steps():
    res = read_workload(WorkloadReadRequest(path=str(FIXTURES / "timing/three_kernels_trace.json"), steps=10))
    assert res.step.steps == 10 and len(res.kernels) == 3
    assert [k.launches_per_step for k in res.kernels] == [1.0, 1.0, 1.0]
    assert [k.category for k in res.kernels] == ["normalization", "attention", "elementwise"]
    assert res.gpu == "NVIDIA H100 80GB HBM3"
    assert any("no step ranges" in n for n in res.notes)


def test_truncated_kineto_trace_is_a_typed_error(tmp_path: Path):
    text = (FIXTURES / "timing/three_kernels_trace.json").read_text()
    bad = tmp_path / "cut.json"
    bad.write_text(text[: len(text) // 2])
    with pytest.raises(TraceFormatError, match="truncated"):
        read_trace(bad)


def test_foreign_json_and_csv_are_typed_errors(tmp_path: Path):
    j = tmp_path / "other.json"
    j.write_text(json.dumps({"kernels": []}))
    with pytest.raises(TraceFormatError, match="not a Chrome trace"):
        read_trace(j)
    c = tmp_path / "other.csv"
    c.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(TraceFormatError, match="not a trace kernelpilot reads"):
        read_trace(c)
    e = tmp_path / "empty.csv"
    e.write_text("")
    with pytest.raises(TraceFormatError, match="empty"):
        read_trace(e)
    with pytest.raises(InputFileError):
        read_trace(tmp_path / "missing.json")


def test_truncated_rocprof_csv_is_a_typed_error(tmp_path: Path):
    text = TRACE.read_text()
    bad = tmp_path / "cut_kernel_trace.csv"
    bad.write_text(text[: len(text) - 40])
    with pytest.raises(TraceFormatError, match=r"truncated|cells"):
        read_trace(bad)


def test_kineto_trace_with_no_device_activity_is_a_typed_error(tmp_path: Path):
    from kernelpilot.workload.errors import NoStepWorkError

    p = tmp_path / "cpu_only.json"
    p.write_text(
        json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}]})
    )
    with pytest.raises(NoStepWorkError):
        read_workload(WorkloadReadRequest(path=str(p)))


def test_ncu_raw_csv_reads_per_launch_durations_without_a_timeline():
    """Real ncu output (tests/fixtures/profile/PROVENANCE.md): 50 launches of 8 kernels, minimal metrics."""
    res = read_workload(WorkloadReadRequest(path=str(FIXTURES / "profile/ncu/minimal/launches50_min.csv")))
    assert res.format == "ncu_csv" and res.step.wall_us is None
    assert sum(k.launches_per_step for k in res.kernels) == 50 and len(res.kernels) == 8
    assert "idle time is lost" in res.method
    cats = {k.name: k.category for k in res.kernels}
    assert cats["gemm_tiled"] == "gemm" and cats["vector_add"] == "elementwise"
    assert cats["transpose_naive"] == "copy_memset" and cats["sync_reduce"] == "reduction"


def test_nsys_stats_tables_read_by_their_column_names(tmp_path: Path):
    """No real nsys output is available (nsys is not installed on our H100 machine; tests/fixtures/workload/
    PROVENANCE.md, "nsys"): this pins the reader on the column names `nsys stats --format csv` writes for
    cuda_gpu_kern_sum and cuda_gpu_trace, in hand-written tables."""
    kern = tmp_path / "kern_sum.csv"
    kern.write_text(
        '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
        '"StdDev (ns)","Name"\n'
        '75.0,"3,000",3,1000.0,1000.0,900,1100,100.0,"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn"\n'
        '25.0,1000,2,500.0,500.0,400,600,141.4,"void at::native::vectorized_elementwise_kernel<4>"\n'
    )
    r = read_workload(WorkloadReadRequest(path=str(kern)))
    assert r.format == "nsys_kern_sum" and [k.category for k in r.kernels] == ["gemm", "elementwise"]
    assert r.kernels[0].us_per_step == 3.0 and r.kernels[0].launches_per_step == 3
    gpu = tmp_path / "gpu_trace.csv"
    gpu.write_text(
        '"Start (ns)","Duration (ns)","CorrId","GrdX","GrdY","GrdZ","BlkX","BlkY","BlkZ","Name"\n'
        '1000,2000,5,132,1,1,128,1,1,"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn"\n'
        '4000,500,6,,,,,,,"[CUDA memcpy Device-to-Device]"\n'
    )
    t = read_workload(WorkloadReadRequest(path=str(gpu)))
    assert t.format == "nsys_gpu_trace" and t.step.busy_us == 2.5 and t.step.wall_us == 3.5
    assert t.kernels[0].grid == [132, 1, 1] and t.kernels[1].category == "copy_memset"


def test_kineto_event_with_a_field_of_the_wrong_type_is_a_typed_error(tmp_path: Path):
    p = tmp_path / "odd.json"
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "soon", "dur": 2, "args": {"External id": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 1, "args": {"External id": 1}},
    ]
    p.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(TraceFormatError, match="unexpected type"):
        read_trace(p)
