"""The GPU acceptance run (tests/guard/gpu_suite.py, gpu_run.sh) is ready to run in one device call: every
pattern of issue 25 has a case, every case file exists, every expected status is a real one. The CPU
plan runs end to end here (`python tests/guard/gpu_suite.py --cpu OUT`); this test only checks the plans."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.guard.gpu_suite import cpu_plan, gpu_plan

from kernelpilot.guard.models import REJECT_STATUSES

HERE = Path(__file__).parent


def test_the_gpu_plan_has_every_hack_pattern_and_six_look_alikes_with_their_files() -> None:
    plan = gpu_plan()
    statuses = {expect for _, _, expect, _ in plan.hacks}
    assert statuses == set(REJECT_STATUSES) - {"rejected_wrong_output", "rejected_nondeterministic"}
    assert len(plan.benign) >= 6 and len({(c, t) for c, t, _ in plan.benign}) == len(plan.benign)
    for cand, task, *_ in [*plan.hacks, *plan.benign]:
        assert (plan.cases / cand).is_file(), cand
        assert task in plan.tasks
    for contract, base in plan.tasks.values():
        assert (plan.cases / contract["module"]).is_file() and (plan.cases / base).is_file()
    assert any(c.get("in_place") for c, _ in plan.tasks.values())  # the declared in-place look-alike


def test_the_cpu_plan_names_real_files_and_statuses() -> None:
    plan = cpu_plan()
    for cand, task, expect, _ in plan.hacks:
        assert (plan.cases / cand).is_file() and task in plan.tasks and expect in REJECT_STATUSES
    for cand, task, _ in plan.benign:
        assert (plan.cases / cand).is_file() and task in plan.tasks


def test_the_driver_script_parses() -> None:
    res = subprocess.run(
        ["bash", "-n", str(HERE / "gpu_run.sh")], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr
    text = (HERE / "gpu_run.sh").read_text()
    assert "timeout 330 python3 tests/guard/gpu_suite.py" in text and "guard_overhead.py --reps 5" in text
    assert "guard_breakdown.py --reps 3" in text
