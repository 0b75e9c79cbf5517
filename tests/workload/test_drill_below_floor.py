"""A drilled launch whose ncu duration is under its roofline floor: IMPOSSIBLE, no headroom percentage."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.profile.ncu_csv import parse_raw, read_text
from kernelpilot.profile.normalize import profile_from_raw
from kernelpilot.wiki import load_wiki
from kernelpilot.workload.drill import DrillResult, _position

RAW = Path(__file__).resolve().parent.parent / "fixtures" / "profile" / "ncu" / "softmax_rows_raw.csv"


def _drilled(duration_us: float) -> DrillResult:
    p = profile_from_raw(parse_raw(read_text(RAW)).kernels[0])
    p = p.model_copy(update={"duration_ns": duration_us * 1e3})
    r = DrillResult(name=p.kernel, ok=True, duration_us=duration_us, dram_bytes=p.bytes_dram(), profile=p)
    _position(r, load_wiki(), "h100-sxm5")
    return r


def test_a_launch_under_its_floor_is_impossible() -> None:
    r = _drilled(1.0)
    assert r.attainable_us is not None and r.attainable_us > 1.0
    assert r.pct_of_attainable is None
    assert r.impossible is not None and r.impossible.startswith("IMPOSSIBLE: ncu gpu__time_duration 1 µs")


def test_a_launch_over_its_floor_keeps_its_position() -> None:
    r = _drilled(500.0)
    assert r.impossible is None
    assert r.pct_of_attainable == pytest.approx(100 * (r.attainable_us or 0) / 500.0)
