"""A measured time under the floor is IMPOSSIBLE wherever it meets a roofline: `roofline --measured-time-us`,
the stop verdict, and the workspace's stop conditions (sweeps and the workload drill-down: tests/sweep and
tests/workload). Never a percentage above 100, never MET."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.roofline.core import analyze
from kernelpilot.roofline.models import Ceiling, RooflineRequest
from kernelpilot.roofline.stop import below_floor, binding, stop_verdict
from kernelpilot.workspace import hardware

SOFTMAX = {"op": "softmax", "rows": 8192, "cols": 4096, "dtype": "fp32"}  # 268 MB: 80.13 µs at 3.35 TB/s
FLOOR_US = 8192 * 4096 * 8 / 3.35e12 * 1e6
SPEC = Ceiling(metric="memory_bandwidth_tb_s", value=3.35, unit="TB/s", citation="spec", measured=False)
MEAS = Ceiling(
    metric="measured_copy_bandwidth_tb_s", value=3.026, unit="TB/s", citation="meas", measured=True
)


def test_roofline_says_impossible_instead_of_a_percentage_over_100() -> None:
    r = analyze(RooflineRequest.model_validate({"gpu": "H100", **SOFTMAX, "measured_time_us": 45.0}))
    assert r.time_floor_us == pytest.approx(FLOOR_US)
    assert r.below_floor is not None and r.below_floor.bound == "memory"
    assert r.below_floor.floor_us == pytest.approx(FLOOR_US) and r.below_floor.measured_time_us == 45.0
    assert "measured time" in r.below_floor.check[0] and "bytes" in r.below_floor.check[1]
    assert r.achieved is not None
    assert r.achieved.pct_of_roofline is None and r.achieved.pct_of_memory_peak is None
    assert r.stop.status == "IMPOSSIBLE" and r.stop.lever is None and r.stop.pct_of_ceiling is None
    assert "IMPOSSIBLE" in r.stop.brief()
    text = r.render_text()
    assert "IMPOSSIBLE" in text and "% of bandwidth" not in text and "verdict MET" not in text
    assert r.cli_exit_code() == 1


def test_a_time_between_the_spec_floor_and_the_measured_ceiling_is_possible() -> None:
    # 85 µs: over the 80.13 µs spec floor, under the 88.7 µs of the measured copy ceiling (90 % of spec)
    r = analyze(RooflineRequest.model_validate({"gpu": "H100", **SOFTMAX, "measured_time_us": 85.0}))
    assert r.below_floor is None and r.stop.status == "MET"
    assert r.achieved is not None and r.achieved.pct_of_roofline == pytest.approx(100 * FLOOR_US / 85.0)


def test_cli_exit_code_and_text(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ["--op", "softmax", "--rows", "8192", "--cols", "4096", "--dtype", "fp32"]
    r = run_cli("roofline", "H100", *args, "--measured-time-us", "45")
    assert r.code == 1 and "IMPOSSIBLE: --measured-time-us 45 µs is under the memory-bound floor" in r.out
    ok = run_cli("roofline", "H100", *args, "--measured-time-us", "120")
    assert ok.code == 0 and "IMPOSSIBLE" not in ok.out


def test_stop_verdict_is_impossible_under_the_spec_floor_not_the_measured_one() -> None:
    work = 3.35e12 * 100e-6  # 100 µs at the spec bandwidth
    v = stop_verdict("memory", work, MEAS, SPEC, measured_time_us=99.0)
    assert v.status == "IMPOSSIBLE" and v.below_floor is not None and v.achieved is None
    assert v.text.startswith("stop verdict IMPOSSIBLE (not MET, not a percentage)")
    fine = stop_verdict("memory", work, MEAS, SPEC, measured_time_us=101.0)
    assert fine.status == "MET" and fine.below_floor is None  # 101 µs: over the floor, within 90 % of 3.026


def test_the_issue_roof_binds_when_its_floor_is_highest_and_is_impossible_under_it() -> None:
    issue = Ceiling(
        metric="issue_issue_rate", value=1045.44, unit="Ginst/s", citation="rates", measured=False
    )
    v = binding(0.0, 3.35e12 * 10e-6, (SPEC, None), (SPEC, None), None, 0.9, (issue, 1045.44e9 * 20e-6))
    assert v.bound == "issue" and v.target_time_us == pytest.approx(20 / 0.9)
    under = binding(0.0, 3.35e12 * 10e-6, (SPEC, None), (SPEC, None), 15.0, 0.9, (issue, 1045.44e9 * 20e-6))
    assert under.status == "IMPOSSIBLE" and under.below_floor is not None
    assert "grid, block and trip" in under.below_floor.check[1]


def test_below_floor_is_none_at_or_over_the_floor() -> None:
    assert below_floor(10.0, 10.0, "compute") is None
    b = below_floor(9.0, 10.0, "compute", "median")
    assert b is not None and b.message.startswith("IMPOSSIBLE: median 9 µs is under the compute-bound floor")


def test_workspace_stop_conditions_say_impossible(tmp_path: Path) -> None:
    info = hardware.gather("H100", dtype="fp32", roofline_args=dict(SOFTMAX), measured_time_us=45.0)
    assert info.stop_status == "IMPOSSIBLE"
    assert info.stop_verdict is not None and "IMPOSSIBLE" in info.stop_verdict
    assert not any("verdict MET" in s for s in info.stop_conditions)
    met = hardware.gather("H100", dtype="fp32", roofline_args=dict(SOFTMAX), measured_time_us=85.0)
    assert met.stop_status == "MET"


def test_eval_physics_says_impossible_and_what_to_check() -> None:
    from kernelpilot.guard.models import Contract, RooflineSpec
    from kernelpilot.guard.physics import check

    spec = RooflineSpec(op="gemm", params={"m": "m", "n": "n", "k": "k"})
    contract = Contract(
        module="c.py",
        candidate="k.py:f",
        shapes=[{"m": 4096, "n": 4096, "k": 4096}],
        dtype="bf16",
        roofline=spec,
    )
    got = check(contract, 100.0, "H100")
    assert got.rejection is not None and got.rejection.status == "rejected_impossible"
    assert (
        "IMPOSSIBLE: check the timing, then the contract's roofline op and its params"
        in got.rejection.evidence
    )
