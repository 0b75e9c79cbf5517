"""The memory record after the documented eval (skills/gpu-kernel-optimizer/cli.md, "One iteration": plan,
eval, memory create --eval-result) names its plan and its passed check, or says why it cannot (issue 42: it
showed `plan: -` and `correctness: passed=-`)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tests.workspace.test_workspace_cli import FIX, _iterate, ws  # noqa: F401  (the `ws` fixture)

CHECK = [sys.executable, "check.py"]


def _task_folder(root: Path, correctness: list[list[str]]) -> Path:
    """An eval's folder as `kernelpilot eval` leaves it: task.json beside result.json."""
    task = root / "profiles" / "task"
    task.mkdir(parents=True)
    shutil.copy(FIX / "eval_result_improved.json", task / "result.json")
    (task / "task.json").write_text(json.dumps({"name": "vadd", "correctness_commands": correctness}))
    return task


def _plan(run_cli, root: Path) -> str:  # type: ignore[no-untyped-def]
    r = run_cli("--json", "plan", "--workspace", str(root), "--title", "float4 loads", "--hypothesis", "h",
                "--steps", "s", "--expected-speedup", "1.3")  # fmt: skip
    assert r.code == 0, r.err
    return str(json.loads(r.out)["path"])


def test_the_documented_iteration_fills_plan_and_check(ws: Path, run_cli) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "840")
    plan = _plan(run_cli, ws)
    assert plan == "plans/v1-float4-loads.md"
    task = _task_folder(ws, [CHECK])
    r = _iterate(run_cli, ws, "// v1", "--change", "float4", "--eval-result", str(task / "result.json"))
    rec = r["record"]
    assert rec["version"] == 1 and rec["plan"] == plan
    assert rec["correctness"]["passed"] is True and rec["correctness"]["command"] == " ".join(CHECK)
    shown = run_cli("memory", "read", "--workspace", str(ws), "--version", "1").out
    assert f"plan:        {plan}" in shown and "passed=True" in shown


def test_an_unchecked_eval_says_why_it_shows_no_check(ws: Path, run_cli) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "840")
    task = _task_folder(ws, [])  # a task without a correctness command: nothing was checked
    rec = _iterate(run_cli, ws, "// v1", "--change", "x", "--eval-result", str(task / "result.json"))[
        "record"
    ]
    assert rec["correctness"]["passed"] is None and rec["plan"] is None
    shown = run_cli("memory", "read", "--workspace", str(ws), "--version", "1").out
    assert "passed=- max_rel_err=- (no check recorded: the eval's task runs no correctness command" in shown
    assert "plan:        - (none: no plans/v<N>-*.md from `kernelpilot plan` for this version" in shown
    base = run_cli("memory", "read", "--workspace", str(ws), "--version", "0").out
    assert "plan:        - (the baseline follows no plan)" in base
