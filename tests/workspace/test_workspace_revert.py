"""The loop records itself: a CPU-only replay of the trial's loop (issue 27) with real `kernelpilot eval`.

baseline (ingested from baseline.json) -> a 4x change (improved) -> a neutral change, reverted with
`memory revert`: the reverted iteration stays in summaries and the final report with its status, speed-ups
are labelled vs parent and vs baseline (the eval's own figure is vs its baseline.json), and the workspace's
task bookkeeping never makes an eval out of scope.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.foundation.errors import StateError
from kernelpilot.workspace.errors import DirtyTreeError

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "sample_task"


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True).stdout


def _json(run_cli: Any, *args: str) -> dict[str, Any]:
    r = run_cli("--json", *args)
    assert r.code == 0, r.err
    out: dict[str, Any] = json.loads(r.out)
    return out


def _set_cost(ws: Path, cost: float, message: str) -> None:
    (ws / "kernel.py").write_text(f"COST_US = {cost}\nNOISE = 0.0005\nBROKEN = False\n")
    _git(ws, "commit", "-qam", message)


@pytest.fixture
def loop(tmp_path: Path, run_cli: Any) -> dict[str, Path]:
    """A workspace whose kernel is the sample task's kernel.py, with a task (eval command) inside it."""
    kernel = tmp_path / "kernel.py"
    kernel.write_text("COST_US = 100.0\nNOISE = 0.0005\nBROKEN = False\n")
    _json(
        run_cli, "workspace", "init", "toy", "--kernel", str(kernel), "--platform", "H100", "--framework",
        "python", "--flops", "1e6", "--bytes-moved", "4e6", "--dtype", "fp32", "--root", str(tmp_path),
    )  # fmt: skip
    ws = tmp_path / "toy"
    for name in ("bench.py", "check.py"):
        shutil.copy(SAMPLE / name, ws / name)
    _git(ws, "add", ".")
    _git(ws, "commit", "-qm", "bench and check")
    _json(
        run_cli, "task", "create", "--name", "toy", "--workdir", str(ws), "--allowed-file", "kernel.py",
        "--eval-command", "python3", "--eval-command", "bench.py", "--correctness-command",
        '["python3", "check.py"]', "--metric-regex", r"time_us: ([0-9.]+)", "--runs", "6",
    )  # fmt: skip
    _git(ws, "add", ".")
    _git(ws, "commit", "-qm", "task")
    return {"ws": ws, "task": ws / ".kernelpilot" / "tasks" / "toy", "db": tmp_path / "exp.db"}


def test_loop_with_a_reverted_neutral_iteration(loop: dict[str, Path], run_cli: Any) -> None:
    ws, task, db = loop["ws"], loop["task"], str(loop["db"])
    # baseline: eval writes baseline.json; kernel-baseline step 6 and 7 record it
    _json(run_cli, "eval", str(task), "--refresh-baseline")
    v0 = _json(
        run_cli, "memory", "create", "--workspace", str(ws), "--change", "baseline", "--correct",
        "--eval-result", str(task / "baseline.json"),
    )["record"]  # fmt: skip
    assert v0["performance"]["median"] == pytest.approx(100.0, rel=1e-3)
    assert v0["performance"]["vs_baseline"] == 1.0 and v0["performance"]["eval"]["status"] == "baseline"
    ingested = _json(run_cli, "exp", "ingest", str(task / "baseline.json"), "--db", db, "--operator", "toy")
    base_rec = ingested["records"][0]
    assert base_rec["status"] == "success" and base_rec["score"] == 1.0 and "baseline" in base_rec["tags"]
    # v1: 4x faster, improved; eval's speed-up and the memory's labels agree
    _set_cost(ws, 25.0, "cost 100 -> 25")
    assert _json(run_cli, "eval", str(task))["record"]["status"] == "improved"
    v1 = _json(
        run_cli, "memory", "create", "--workspace", str(ws), "--change", "cost 100 -> 25", "--eval-result",
        str(task / "result.json"),
    )["record"]  # fmt: skip
    assert v1["parent"] == 0 and v1["performance"]["eval"]["status"] == "improved"
    assert v1["performance"]["vs_parent"] == pytest.approx(4.0, rel=5e-3)
    assert v1["performance"]["vs_baseline"] == pytest.approx(4.0, rel=5e-3)
    # the improved version becomes the eval's baseline (new parent); bookkeeping of the task is not in scope
    _json(run_cli, "eval", str(task), "--refresh-baseline")
    # v2: a change that does nothing: neutral vs the parent, still 4x vs the workspace baseline
    (ws / "kernel.py").write_text((ws / "kernel.py").read_text() + "# block 1024 -> 2048\n")
    _git(ws, "commit", "-qam", "block 1024 -> 2048")
    assert _json(run_cli, "eval", str(task))["record"]["status"] == "neutral"
    v2 = _json(
        run_cli, "memory", "create", "--workspace", str(ws), "--change", "block 1024 -> 2048",
        "--eval-result", str(task / "result.json"),
    )["record"]  # fmt: skip
    perf = v2["performance"]
    assert v2["parent"] == 1 and perf["eval"]["status"] == "neutral"
    assert perf["eval"]["speedup"] == pytest.approx(1.0, abs=0.01)  # eval: vs its baseline.json = v1
    assert perf["vs_parent"] == pytest.approx(1.0, abs=0.01)
    assert perf["vs_baseline"] == pytest.approx(4.0, rel=5e-3)  # was recorded as eval's 1.0x before
    # revert: the kernel goes back to v1's, the record stays with its status
    out = _json(run_cli, "memory", "revert", "--workspace", str(ws), "--reason", "neutral: no change in time")
    assert out["record"]["version"] == 2 and out["record"]["reverted"]["status"] == "neutral"
    assert out["record"]["reverted"]["restored_version"] == 1 and not out["record"]["masked"]
    assert (ws / "kernel.py").read_text() == _git(ws, "show", f"{v1['commit']}:kernel.py")
    assert _git(ws, "status", "--porcelain") == ""
    summary = _json(run_cli, "memory", "summary", "--workspace", str(ws))
    assert [e["status"] for e in summary["entries"]] == ["kept", "kept", "reverted:neutral"]
    assert summary["reverted_versions"] == [2] and summary["masked_versions"] == []
    assert summary["best_version"] == 1 and summary["latest_version"] == 1
    assert _json(run_cli, "memory", "read", "--workspace", str(ws))["record"]["version"] == 1
    # the next iteration starts from v1, not from the reverted v2
    v3 = _json(run_cli, "memory", "create", "--workspace", str(ws), "--change", "next", "--median", "24")
    assert v3["record"]["parent"] == 1
    # the final report shows the reverted iteration with its status, not as abandoned
    _json(run_cli, "report", "--workspace", str(ws), "--kind", "final")
    final = (ws / "reports" / "final.md").read_text()
    assert "Reverted iterations (kept in the history, not in the result):" in final
    assert "- v2 — block 1024 -> 2048: neutral, 1.00x vs its parent v1; neutral: no change in time" in final
    assert "| v2 | v1 | reverted (neutral) | block 1024 -> 2048 |" in final
    assert "Abandoned lines of work" not in final
    html = (ws / "reports" / "final.html").read_text()
    assert "<td>reverted (neutral)</td>" in html and "v2 (neutral: neutral: no change in time)" in html


def test_revert_refuses_baseline_reverted_and_dirty(loop: dict[str, Path], run_cli: Any) -> None:
    from kernelpilot.workspace.memory import memory_revert
    from kernelpilot.workspace.models import MemoryRevertRequest

    ws = loop["ws"]
    _json(run_cli, "memory", "create", "--workspace", str(ws), "--change", "baseline", "--median", "100")

    def revert(**kw: Any) -> Any:
        return memory_revert(MemoryRevertRequest(workspace=str(ws), reason="r", **kw))

    with pytest.raises(StateError, match="nothing to revert"):
        revert(version=0, status="neutral")
    _set_cost(ws, 90.0, "v1")
    _json(run_cli, "memory", "create", "--workspace", str(ws), "--change", "v1", "--median", "90")
    from kernelpilot.foundation.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="--status"):  # no eval on record, no --status
        revert()
    (ws / "kernel.py").write_text("dirty\n")
    with pytest.raises(DirtyTreeError):
        revert(status="regressed")
    _git(ws, "checkout", "kernel.py")
    assert revert(status="regressed").record["reverted"]["status"] == "regressed"
    with pytest.raises(StateError, match="already reverted:regressed"):
        revert(version=1, status="neutral")
