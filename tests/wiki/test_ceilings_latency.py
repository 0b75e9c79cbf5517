"""`ceilings measure`'s latency floor (measured_min_kernel_us) with the GPU edge replaced: the timed samples
become a `## Measured` wiki line, and the workload triage takes that line as its latency floor instead of the
trace's shortest kernel (workload/trace_roofline.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelpilot.ceilings import measure
from kernelpilot.ceilings.models import CeilingsRequest
from kernelpilot.wiki import parse_spec_line
from kernelpilot.wiki.core import load_wiki
from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest
from kernelpilot.workload.trace_roofline import LATENCY_METRIC, _latency, place

TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "workload" / "h100_decode_trace.json"


class _Tensor:
    def __init__(self) -> None:
        self.adds = 0

    def add_(self, v: float) -> _Tensor:
        self.adds += 1
        return self


def _fake_torch() -> Any:
    made: list[_Tensor] = []

    def zeros(*_: Any, **__: Any) -> _Tensor:
        made.append(_Tensor())
        return made[-1]

    return SimpleNamespace(zeros=zeros, float32="float32", made=made)


def test_latency_floor_is_a_measured_wiki_line(monkeypatch: pytest.MonkeyPatch) -> None:
    samples_ms = [0.00210, 0.00205, 0.00215, 0.00208, 0.00212]  # per-launch times the warm mode would report
    calls: list[int] = []

    def timed(torch: Any, fn: Any, runs: int, warmup: int) -> list[float]:
        fn()
        calls.append(runs)
        return samples_ms

    monkeypatch.setattr(measure, "_time_ms", timed)
    torch = _fake_torch()
    record = measure._Recorder(
        "device=NVIDIA H100 80GB HBM3, driver=580, date=2026-12-05", "kernelpilot ceilings measure", 5
    )
    measure._latency(torch, CeilingsRequest(runs=5), "cuda:0", record)
    assert calls == [5] and torch.made[0].adds == 1  # one launch of the 1-element add per call of fn
    (rec,) = record.records
    assert rec.metric == LATENCY_METRIC and rec.unit == "us" and rec.value == pytest.approx(2.1)
    p = parse_spec_line(rec.line)
    assert p is not None and not isinstance(p, str), p
    assert p.key == LATENCY_METRIC and p.measured and p.value == pytest.approx(2.1)
    assert "back-to-back launches" in p.source


def test_all_zero_samples_are_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure, "_time_ms", lambda *a, **k: [0.0, 0.0, 0.0])
    record = measure._Recorder("device=x", "c", 3)
    with pytest.raises(measure.KernelpilotError, match="latency floor"):
        measure._latency(_fake_torch(), CeilingsRequest(runs=3), "cuda:0", record)


def test_the_triage_takes_the_measured_floor_and_says_so_when_unmeasured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(measure, "_time_ms", lambda *a, **k: [0.0020, 0.0020, 0.0020])
    record = measure._Recorder(
        "device=NVIDIA H100 80GB HBM3, driver=580, date=2026-12-05", "kernelpilot ceilings measure", 3
    )
    measure._latency(_fake_torch(), CeilingsRequest(runs=3), "cuda:0", record)
    (tmp_path / "h100-sxm5.md").write_text(
        "# measured (gpu_id: h100-sxm5)\n\n## Measured\n" + record.records[0].line + "\n"
    )
    res = read_workload(WorkloadReadRequest(path=str(TRACE)))
    mean = next(k for k in res.kernels if k.shape_op == "aten::mean")
    unmeasured = mean.trace_roofline or {}
    shortest = min(k.launch.min_us for k in res.kernels)
    assert unmeasured["bound"] == "latency" and unmeasured["floor_us"] == shortest
    assert "latency floor unmeasured for h100-sxm5" in unmeasured["latency_floor"]
    assert unmeasured["work_floor_us"] < 0.02  # the bandwidth floor of 8192 fp32 values: nanoseconds
    wiki = load_wiki([tmp_path])
    latency = _latency(wiki, "h100-sxm5", res.kernels)
    assert latency[0] == pytest.approx(2.0) and "measured" in latency[1] and "h100-sxm5.md" in latency[1]
    placed = place(mean, wiki, "h100-sxm5", latency)
    assert placed is not None and placed["floor_us"] == pytest.approx(2.0) and placed["bound"] == "latency"
    assert placed["share_of_floor"] == pytest.approx(min(2.0 / mean.launch.median_us, 1.0))
    json.dumps(placed)  # the result's JSON holds it


def test_roofline_says_when_its_floor_is_under_the_latency_floor(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kernelpilot.roofline.core import analyze
    from kernelpilot.roofline.models import RooflineRequest

    tiny = RooflineRequest(gpu="h100-sxm5", op="rmsnorm", rows=8, cols=2048, dtype="bf16")
    unmeasured = analyze(tiny)
    assert unmeasured.time_floor_us < 0.05
    assert any("latency floor unmeasured for h100-sxm5" in n and "no target" in n for n in unmeasured.notes)
    big = analyze(RooflineRequest(gpu="h100-sxm5", op="gemm", m=4096, n=4096, k=4096, dtype="bf16"))
    assert not any("latency floor" in n for n in big.notes)
    monkeypatch.setattr(measure, "_time_ms", lambda *a, **k: [0.0020, 0.0020, 0.0020])
    record = measure._Recorder("device=NVIDIA H100 80GB HBM3, driver=580, date=2026-12-05", "c", 3)
    measure._latency(_fake_torch(), CeilingsRequest(runs=3), "cuda:0", record)
    (tmp_path / "h100-sxm5.md").write_text(
        "# m (gpu_id: h100-sxm5)\n\n## Measured\n" + record.records[0].line + "\n"
    )
    measured = analyze(tiny.model_copy(update={"wiki": [str(tmp_path)]}))
    assert any(
        n.startswith("latency floor 2 µs per launch") and "reachable floor" in n for n in measured.notes
    )
