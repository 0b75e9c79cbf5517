"""classify_bottleneck on the H100 fixtures: right verdict per kernel, evidence values equal the CSV's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kernelpilot.bottleneck.classify import classify_bottleneck
from kernelpilot.bottleneck.models import ClassifyRequest
from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.profile.core import profile_parse
from kernelpilot.profile.models import ProfileParseRequest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile"
NCU = FIX / "ncu"

EXPECTED = {
    "vector_add": ("memory_bound", "dram"),
    "gemm_naive": ("memory_bound", "l1_shared"),
    "gemm_tiled": ("memory_bound", "l1_shared"),
    "softmax_rows": ("memory_bound", "dram"),
    "transpose_naive": ("memory_bound", "l2"),
    "local_array": ("latency_bound", None),
    "sync_reduce": ("sync_bound", None),
    "dep_chain": ("latency_bound", None),
    "cublas_gemm_bf16": ("compute_bound", None),
    "triton_axpy": ("memory_bound", "dram"),
}


def raw_row(path: Path) -> dict[str, str]:
    rows = [r for r in csv.reader(path.open()) if len(r) > 10]
    return dict(zip(rows[0], rows[2], strict=True))


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_full_set_verdicts_and_checkable_evidence(kernel: str) -> None:
    path = NCU / f"{kernel}_raw.csv"
    res = classify_bottleneck(ClassifyRequest(profile_path=str(path)))
    (v,) = res.verdicts
    assert (v.verdict, v.memory_level) == EXPECTED[kernel]
    assert 0.5 <= v.confidence <= 1.0 and v.next_measurements and len(v.evidence) >= 3
    row = raw_row(path)
    checked = 0
    for e in v.evidence:
        assert e.threshold and str(path) in e.source
        if e.metric in row and isinstance(e.value, float):
            cell = float(row[e.metric].replace(",", ""))  # % and ratio columns: no unit scaling
            assert e.value == pytest.approx(cell, rel=1e-9), e.metric
            checked += 1
    assert checked >= 2


def test_minimal_set_gives_sol_based_verdicts() -> None:
    for kernel in ("vector_add", "transpose_naive", "cublas_gemm_bf16", "dep_chain", "gemm_tiled"):
        (v,) = classify_bottleneck(
            ClassifyRequest(profile_path=str(NCU / "minimal" / f"{kernel}_min.csv"))
        ).verdicts
        assert (v.verdict, v.memory_level) == EXPECTED[kernel], kernel


def test_contract_field_names() -> None:
    (v,) = classify_bottleneck(ClassifyRequest(profile_path=str(NCU / "vector_add_raw.csv"))).verdicts
    d = v.model_dump(mode="json")
    for key in ("kernel", "verdict", "memory_level", "confidence", "evidence", "next_measurements"):
        assert key in d
    assert set(d["evidence"][0]) >= {"metric", "value", "threshold", "source"}


def test_profile_json_input_and_isa_facts() -> None:
    parsed = profile_parse(
        ProfileParseRequest(path=str(NCU / "local_array_raw.csv"), include_raw_metrics=True)
    )
    res = classify_bottleneck(
        ClassifyRequest(
            profile_json=parsed.model_dump_json(),
            isa_facts_json=json.dumps({"stack_frame_bytes": 256, "registers": 32}),
        )
    )
    (v,) = res.verdicts
    assert v.verdict == "latency_bound"
    metrics = {e.metric: e.value for e in v.evidence}
    assert metrics["isa.stack_frame_bytes"] == 256.0
    assert metrics["l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum + _st.sum"] == 537213699 + 302368559


def test_amd_trace_without_counters_is_unknown_then_peaks_used() -> None:
    path = str(FIX / "rocprofv3" / "synthetic_counter_collection.csv")
    (copy, _gemm) = classify_bottleneck(ClassifyRequest(profile_path=path)).verdicts
    assert copy.verdict == "unknown" and copy.missing
    peaks = json.dumps(
        [
            {
                "metric": "memory_bandwidth_tb_s",
                "value": 0.1,
                "unit": "TB/s",
                "citation": "memory_bandwidth_tb_s: 0.1 TB/s <- test-peaks.md:L1",
            }
        ]
    )
    (copy, _gemm) = classify_bottleneck(ClassifyRequest(profile_path=path, peaks_json=peaks)).verdicts
    # 8 MiB in 100 us = 83.9 GB/s = 83.9% of the (test) 0.1 TB/s peak -> memory bound at DRAM
    assert copy.verdict == "memory_bound" and copy.memory_level == "dram"
    ev = [e for e in copy.evidence if e.source.startswith("memory_bandwidth_tb_s")]
    assert ev and ev[0].value == pytest.approx(100 * 8 * 1024 * 1024 / 100e-6 / 1e11, rel=1e-3)


def test_bad_arguments() -> None:
    with pytest.raises(InvalidArgumentError):
        classify_bottleneck(ClassifyRequest())
    with pytest.raises(InvalidArgumentError):
        classify_bottleneck(ClassifyRequest(profile_json="{not json"))
    with pytest.raises(InvalidArgumentError):
        classify_bottleneck(ClassifyRequest(profile_path=str(NCU / "vector_add_raw.csv"), peaks_json="[1]"))


def test_cli(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("bottleneck", str(NCU / "triton_axpy_raw.csv"))
    assert r.code == 0 and "memory_bound (dram)" in r.out and "dram" in r.out
    r = run_cli("bottleneck", str(NCU / "cublas_gemm_bf16_raw.csv"), "--json")
    assert json.loads(r.out)["verdicts"][0]["verdict"] == "compute_bound"
