"""templates/batch_run.sh (skills/kernel-baseline/batch.md): one run per phase, and the gate that stops a
`candidates` run on a baseline that is not usable before any candidate is timed. `kernelpilot` is replaced
by a stub that prints the status a GPU run would (the script only reads `status` and copies the files)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STUB = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
case "$*" in
  *doctor*) echo '{}' ;;
  *--refresh-baseline*) echo "{\\"status\\": \\"$BASE_STATUS\\"}"; echo '{}' > "$TASK/baseline.json" ;;
  eval*) echo '{"status": "improved"}'; echo '{"cand": 1}' > "$TASK/result.json" ;;
esac
"""


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), *args], check=True, capture_output=True)


# the script runs git and coreutils' timeout: skipped with their names locally, a failure in CI
pytestmark = pytest.mark.needs_tool("git", "timeout")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "task").mkdir(parents=True)
    (ws / "kernel.py").write_text("v = 0\n")
    _git(ws, "init", "-q")
    for k, v in (("user.name", "t"), ("user.email", "t@t"), ("commit.gpgsign", "false")):
        _git(ws, "config", k, v)
    _git(ws, "add", "kernel.py")
    _git(ws, "commit", "-q", "-m", "v0")
    _git(ws, "branch", "cand1")
    _git(ws, "checkout", "-q", "cand1")
    (ws / "kernel.py").write_text("v = 1\n")
    _git(ws, "commit", "-q", "-am", "cand1")
    _git(ws, "checkout", "-q", "-")
    stub = tmp_path / "kp"
    stub.write_text(STUB)
    stub.chmod(0o755)
    return ws


def _run(ws: Path, status: str) -> tuple[int, str, list[str]]:
    out = ws.parent / "out"
    env = {
        **os.environ,
        "PHASE": "candidates",
        "WS": str(ws),
        "TASK": str(ws / "task"),
        "KERNEL": "kernel.py",
        "CANDIDATES": "cand1",
        "OUT": str(out),
        "KP": str(ws.parent / "kp"),
        "BASE_STATUS": status,
        "CALLS": str(ws.parent / "calls.txt"),
    }
    res = subprocess.run(
        ["bash", str(REPO / "templates" / "batch_run.sh")], env=env, capture_output=True, text=True
    )
    calls = (ws.parent / "calls.txt").read_text().splitlines()
    return res.returncode, res.stdout, calls


def test_a_bad_baseline_stops_before_any_candidate(ws: Path) -> None:
    rc, table, calls = _run(ws, "unstable")
    assert rc == 1
    assert "baseline status unstable" in table
    assert not [c for c in calls if c.startswith("eval") and "--refresh-baseline" not in c]


def test_a_usable_baseline_times_each_candidate_and_restores_the_kernel(ws: Path) -> None:
    rc, table, calls = _run(ws, "baseline")
    assert sum(c.startswith("eval --json /") for c in calls) == 1  # one eval per candidate
    assert rc == 0, table
    assert "GATE" in table and "cand1" in table and "improved" in table
    assert (ws.parent / "out" / "cand1" / "result.json").read_text().strip() == '{"cand": 1}'
    assert (ws / "kernel.py").read_text() == "v = 0\n"  # the parent is back in the tree
    assert table.strip().splitlines()[0].split()[0] == "step"  # the summary table is printed last
