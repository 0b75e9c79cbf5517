"""A command with an NVTX region: ncu profiles exactly the instances skip+1 .. skip+steps of the range, so
the per-step figures divide by the steps that were profiled, and the program's own warm-up steps (inside the
same range) can be skipped. ncu is the one recorded H100 raw page, printed by a stand-in that keeps its argv
(no GPU here); the filter syntax is ncu's documented
`--range-filter <yes/no>:<start/stop instances>:<NVTX instances>`."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.workload.capture import capture_command
from kernelpilot.workload.core import run_workload
from kernelpilot.workload.errors import RegionNotEnteredError
from kernelpilot.workload.models import CaptureTarget, WorkloadRunRequest

WL = Path(__file__).resolve().parents[1] / "fixtures" / "workload"


def _ncu(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "ncu"
    exe.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{tmp_path}/argv"\n{body}\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_the_profiled_instances_are_the_ones_after_the_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    csv = WL / "h100_decode_drill_ncu_raw.csv"
    monkeypatch.setenv("KERNELPILOT_NCU", str(_ncu(tmp_path, f"cat '{csv}'")))
    target = CaptureTarget(command=["./app"], workdir=str(tmp_path), region="step", skip_steps=3)
    cap = capture_command(target, 4, tmp_path, 30)
    argv = (tmp_path / "argv").read_text().splitlines()
    i = argv.index("--range-filter")
    assert argv[i + 1] == "::[4-7]"
    assert argv[argv.index("--nvtx-include") + 1] == "step/" and "--nvtx" in argv
    assert argv[-1] == "./app"
    assert cap.trace.steps == 4 and cap.trace.activities
    assert any("instances 4-7 of NVTX range 'step' (3 skipped)" in n for n in cap.trace.notes)


def test_without_a_skip_the_first_steps_instances_are_profiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    csv = WL / "h100_decode_drill_ncu_raw.csv"
    monkeypatch.setenv("KERNELPILOT_NCU", str(_ncu(tmp_path, f"cat '{csv}'")))
    capture_command(CaptureTarget(command=["./app"], workdir=str(tmp_path), region="step"), 10, tmp_path, 30)
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[argv.index("--range-filter") + 1] == "::[1-10]"


def test_a_cuda_profiler_region_takes_no_instance_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    csv = WL / "h100_decode_drill_ncu_raw.csv"
    monkeypatch.setenv("KERNELPILOT_NCU", str(_ncu(tmp_path, f"cat '{csv}'")))
    capture_command(CaptureTarget(command=["./app"], workdir=str(tmp_path)), 5, tmp_path, 30)
    argv = (tmp_path / "argv").read_text().splitlines()
    assert "--range-filter" not in argv and argv[argv.index("--profile-from-start") + 1] == "off"


def test_too_few_instances_name_the_ones_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KERNELPILOT_NCU", str(_ncu(tmp_path, "echo '==WARNING== No kernels were profiled.'")))
    target = CaptureTarget(command=["./app"], workdir=str(tmp_path), region="step", skip_steps=20)
    with pytest.raises(RegionNotEnteredError, match=r"instances 21-30 of NVTX range 'step'") as err:
        capture_command(target, 10, tmp_path, 30)
    assert "skip_steps + steps" in err.value.hint


@pytest.mark.parametrize(
    "req",
    [
        {"spec": "step.py:make", "skip_steps": 2},
        {"command": ["./app"], "skip_steps": 2},
    ],
)
def test_skip_steps_needs_a_command_with_a_region(req: dict):
    with pytest.raises(InvalidArgumentError, match=r"skip_steps=2 applies to a command with a region"):
        run_workload(WorkloadRunRequest(**req))
