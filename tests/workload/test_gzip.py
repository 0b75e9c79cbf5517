"""Gzip traces (tensorboard_trace_handler(use_gzip=True) writes `.json.gz`) read equal to the plain file,
told by the content's magic bytes whatever the suffix."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.models import WorkloadReadRequest
from kernelpilot.workload.readers.gzipped import gunzip

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def _read(path: Path) -> dict:
    doc = read_workload(WorkloadReadRequest(path=str(path))).model_dump(mode="json")
    doc["source"] = ""
    for o in doc["opportunities"]:  # `workload isolate <this file> --kernel N` names the file read
        o["next_command"] = o["next_command"].replace(str(path), "TRACE")
    return doc


@pytest.mark.parametrize(
    ("rel", "suffix"),
    [
        ("workload/h100_decode_trace.json", ".json.gz"),
        ("workload/h100_decode_trace.json", ".json"),  # a gzip renamed: the content decides
        ("workload/h100_train_trace.json", ".gz"),
        ("workload/mi350x_flash_attn_kernel_trace.csv", ".csv.gz"),
    ],
)
def test_gzip_reads_equal_to_the_plain_file(tmp_path: Path, rel: str, suffix: str):
    plain = FIX / rel
    gz = tmp_path / f"t{suffix}"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert _read(gz) == _read(plain)


def test_truncated_gzip_is_a_typed_error(tmp_path: Path):
    data = gzip.compress((FIX / "workload/h100_decode_trace.json").read_bytes())
    bad = tmp_path / "t.json.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="ends early"):
        read_workload(WorkloadReadRequest(path=str(bad)))


def test_gzip_past_the_size_limit_is_refused():
    bomb = gzip.compress(b"\0" * 5_000_000)
    with pytest.raises(TraceFormatError, match="inflates past"):
        gunzip(bomb, "bomb.gz", 1_000_000)
    assert gunzip(gzip.compress(b"a") + gzip.compress(b"b"), "two.gz", 10) == b"ab"  # every member
