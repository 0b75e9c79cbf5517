"""Per-pipe instruction counters of a full-set ncu raw page (KernelProfile.pipes, inst_executed)."""

from __future__ import annotations

import csv
from pathlib import Path

from kernelpilot.profile.core import profile_parse
from kernelpilot.profile.models import ProfileParseRequest
from kernelpilot.profile.ncu_csv import pipes_from_raw

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "ncu"


def _cell(path: Path, metric: str) -> float:
    rows = list(csv.reader(ln for ln in path.read_text().splitlines() if ln.startswith('"')))
    return float(rows[2][rows[0].index(metric)].replace(",", ""))


def test_full_set_gives_issue_counters_and_pipe_utilization() -> None:
    path = FIX / "softmax_rows_raw.csv"
    res = profile_parse(ProfileParseRequest(path=str(path)))
    k = res.kernels[0]
    assert k.inst_executed == _cell(path, "smsp__inst_executed.sum") == 51757056.0
    assert k.issue_active_pct == _cell(path, "smsp__issue_active.avg.pct_of_peak_sustained_active")
    assert k.sm_cycles_active == _cell(path, "sm__cycles_active.avg")
    by = {p.pipe: p for p in k.pipes}
    alu = _cell(path, "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active")
    assert by["alu"].utilization_pct == alu
    assert by["alu"].cycles_active_pct == _cell(
        path, "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"
    )
    assert by["xu"].utilization_pct == _cell(
        path, "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
    )
    # the full set has no per-pipe counts: they stay None rather than being guessed
    assert all(p.inst_executed is None for p in k.pipes)
    assert k.pipes[0].pipe == "alu"  # busiest first
    assert [p.pipe for p in k.pipes].count("alu") == 1  # the TPC.TriageCompute realtime copy is not a pipe


def test_explicit_pipe_counts_and_peaks_are_read() -> None:
    values: dict[str, float | str | None] = {
        "sm__inst_executed_pipe_alu.sum": 1000.0,
        "sm__inst_executed_pipe_alu.sum.peak_sustained": 264.0,
        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active": 50.0,
        "sm__inst_executed_pipe_lsu.sum": 10.0,
        "sm__inst_executed_pipe_xu.sum": None,
        "TPC.TriageCompute.sm__inst_executed_pipe_alu_realtime.avg.pct_of_peak_sustained_elapsed": 99.0,
    }
    rows = pipes_from_raw(values)
    assert rows[0] == {
        "pipe": "alu",
        "inst_executed": 1000.0,
        "utilization_pct": 50.0,
        "peak_inst_per_cycle": 264.0,
        "cycles_active_pct": None,
    }
    assert [r["pipe"] for r in rows] == ["alu", "lsu"]
