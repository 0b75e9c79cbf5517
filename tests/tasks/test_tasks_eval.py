"""Eval of a CPU-only sample task: every status reached by a real run of real commands."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.waiting import process_gone, wait_until

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, StateError
from kernelpilot.tasks.create import create_task
from kernelpilot.tasks.errors import CorrectnessFailedError
from kernelpilot.tasks.evaluate import evaluate
from kernelpilot.tasks.ledger import ledger_show
from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest, LedgerRequest
from kernelpilot.timing.errors import CommandTimeoutError

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tasks" / "sample_task"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


def set_kernel(repo: Path, cost: float = 100.0, noise: float = 0.002, broken: bool = False) -> None:
    (repo / "kernel.py").write_text(f"COST_US = {cost}\nNOISE = {noise}\nBROKEN = {broken}\n")


def set_cycling_kernel(repo: Path, counter: Path, costs: list[float]) -> None:
    """A candidate whose cost cycles through `costs` run after run (a counter file outside the repo): its
    paired ratios differ block to block, deterministically."""
    (repo / "kernel.py").write_text(
        f"import pathlib\n_c = pathlib.Path({str(counter)!r})\n"
        "_n = int(_c.read_text()) if _c.exists() else 0\n_c.write_text(str(_n + 1))\n"
        f"COST_US = {costs!r}[_n % {len(costs)}]\nNOISE = 0.0\nBROKEN = False\n"
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    shutil.copytree(FIXTURE, r)
    git(r, "init", "-q")
    git(r, "add", ".")
    git(r, "commit", "-qm", "base")
    return r


def make_task(repo: Path, **kw: object) -> Path:
    args: dict[str, object] = {
        "name": "sample",
        "eval_command": [sys.executable, "bench.py"],
        "metric_regex": r"time_us: ([0-9.]+)",
        "metric_unit": "us",
        "allowed_file": ["kernel.py"],
        "correctness_command": [json.dumps([sys.executable, "check.py"])],
        "workdir": str(repo),
        "runs": 5,
        "warmup": 1,
        "op": "toy",
        "shape": ["1024"],
        "dtype": ["fp32"],
    }
    args.update(kw)
    res = create_task(CreateTaskRequest.model_validate(args))
    return repo / res.task_dir


def baseline(task_dir: Path) -> None:
    out = evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    assert out.baseline is not None and out.baseline.stable


def candidate(task_dir: Path, runs: int | None = None) -> dict[str, object]:
    out = evaluate(EvaluateRequest(task=str(task_dir), runs=runs))
    assert out.record is not None
    on_disk = json.loads((task_dir / "result.json").read_text())
    assert on_disk == out.record.model_dump(mode="json")
    return on_disk


def test_task_create_writes_task_json_and_md(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("NCU_FOO", "x")
    task_dir = make_task(repo, env=["MY_FLAG=1"])
    task = json.loads((task_dir / "task.json").read_text())
    # this interpreter is stored as {python} (found again at eval time), never as this machine's path
    assert task["eval_command"] == ["{python}", "bench.py"]
    assert task["correctness_commands"] == [["{python}", "check.py"]]
    assert task["metric"]["direction"] == "lower" and task["allowed_files"] == ["kernel.py"]
    assert {"CUDA_LAUNCH_BLOCKING", "NCU_FOO"} <= set(task["environment"]["stripped_at_creation"])
    assert task["environment"]["set"] == {"MY_FLAG": "1"}
    assert task["workdir"] == os.path.join("..", "..", "..")
    md = (task_dir / "TASK.md").read_text()
    assert "`kernel.py`" in md and "lower is better" in md


def test_all_statuses_by_real_runs(repo: Path, tmp_path: Path) -> None:
    task_dir = make_task(repo)
    # needs_baseline: no baseline yet
    r = candidate(task_dir)
    assert r["status"] == "needs_baseline" and r["speedup"] is None
    baseline(task_dir)
    base = json.loads((task_dir / "baseline.json").read_text())
    assert base["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert len(base["samples"]) == 5 and 99.0 < base["stats"]["median"] < 101.0
    # neutral: same code
    r = candidate(task_dir)
    assert r["status"] == "neutral", r
    assert r["method"] == "paired" and r["pairs"] == 3  # 5 runs -> 3 blocks (A,B,B,A, B,A,A,B, A,B,B,A)
    assert (task_dir / ".baseline-tree" / "kernel.py").read_text() == (repo / "kernel.py").read_text()
    # improved: 20 % cheaper
    set_kernel(repo, cost=80.0)
    r = candidate(task_dir)
    assert r["status"] == "improved" and r["changed_files"] == ["kernel.py"]
    assert r["speedup"] == pytest.approx(1.25, rel=0.01)
    assert r["ratio_median"] == pytest.approx(0.8, rel=0.01) and r["method"] == "paired"
    lo, hi = r["speedup_ci"]  # type: ignore[misc]
    assert 1.0 < lo <= r["speedup"] <= hi
    # the baseline side ran the baseline commit's kernel (100 us) now, beside the candidate (80 us)
    assert len(r["samples"]) == 6 and len(r["baseline_samples"]) == 6
    assert 99.0 < r["baseline_median"] < 101.0 and 79.0 < r["candidate_median"] < 81.0  # type: ignore[operator]
    assert r["diff_hash"] and r["commit"] == base["commit"]
    # regressed: 25 % dearer
    set_kernel(repo, cost=125.0)
    r = candidate(task_dir)
    assert r["status"] == "regressed" and r["speedup"] == pytest.approx(0.8, rel=0.01)
    assert r["speedup_ci"][1] < 1.0  # type: ignore[index]
    # unstable: the paired ratio itself is not resolved (block ratios 1.05, 1.25, 0.8, ...) -> no claim
    set_cycling_kernel(repo, tmp_path / "count", [150.0, 60.0, 100.0])
    r = candidate(task_dir, runs=12)
    assert r["status"] == "unstable" and r["speedup"] is None and r["speedup_ci"] is None
    assert r["candidate_median"] is not None and r["pairs"] == 6
    rlo, rhi = r["ratio_ci"]  # type: ignore[misc]
    assert rlo < 1.0 < rhi
    # correctness_failed: check.py fails, its stderr in the tail
    set_kernel(repo, cost=50.0, broken=True)
    r = candidate(task_dir)
    assert r["status"] == "correctness_failed" and r["samples"] == []
    assert "max abs error" in r["output_tail"]  # type: ignore[operator]
    # out_of_scope: the harness itself was edited
    set_kernel(repo, cost=50.0)
    (repo / "bench.py").write_text((repo / "bench.py").read_text() + "\n# tweak\n")
    (repo / "notes.txt").write_text("untracked too\n")
    r = candidate(task_dir)
    assert r["status"] == "out_of_scope" and r["changed_files"] == ["bench.py", "kernel.py", "notes.txt"]
    assert "bench.py" in r["output_tail"] and r["samples"] == []  # type: ignore[operator]
    # ledger: one line per candidate eval, versioned, in order
    lines = (task_dir / "ledger.jsonl").read_text().splitlines()
    statuses = [json.loads(x)["status"] for x in lines]
    assert statuses == [
        "needs_baseline",
        "neutral",
        "improved",
        "regressed",
        "unstable",
        "correctness_failed",
        "out_of_scope",
    ]
    assert all(json.loads(x)["ledger_version"] == 1 and json.loads(x)["schema_version"] == 1 for x in lines)
    shown = ledger_show(LedgerRequest(task=str(task_dir), status="improved"))
    assert shown.total == 1 and shown.entries[0]["speedup"] == pytest.approx(1.25, rel=0.01)
    # the text table: `last` keeps the newest rows (the total counts all); a status filter keeps its rows
    last_two = ledger_show(LedgerRequest(task=str(task_dir), last=2)).render_text().splitlines()
    assert last_two[0].endswith(": 7 entries") and len(last_two) == 4
    assert [row.split()[1] for row in last_two[2:]] == ["correctness_failed", "out_of_scope"]
    improved_rows = shown.render_text().splitlines()[2:]
    speedup_cell = f"{shown.entries[0]['speedup']:.3f}x"  # the run's noise moves the third decimal
    assert len(improved_rows) == 1 and improved_rows[0].split()[1:3] == ["improved", speedup_cell]


def test_failed_when_no_metric_and_when_command_fails(repo: Path) -> None:
    task_dir = make_task(repo)
    baseline(task_dir)
    (repo / "kernel.py").write_text(
        "COST_US = 1.0\nNOISE = 0.0\nBROKEN = False\nimport sys\nprint('no number here'); sys.exit(0)\n"
    )
    r = candidate(task_dir)
    # check.py imports kernel too and exits 0 early; bench prints no metric -> failed
    assert r["status"] == "failed" and "no match of metric_regex" in r["output_tail"]  # type: ignore[operator]
    assert "no number here" in r["output_tail"]  # type: ignore[operator]
    (repo / "kernel.py").write_text("raise SystemExit('boom: kernel exploded')\n")
    task2 = make_task(repo, name="nocheck", correctness_command=[])
    baseline_needed = candidate(task2)
    assert baseline_needed["status"] == "needs_baseline"


def test_hanging_eval_command_is_killed_with_tail(repo: Path) -> None:
    (repo / "hang.py").write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('about to hang', file=sys.stderr, flush=True)\n"
        "time.sleep(60)\n"
    )
    git(repo, "add", "hang.py")
    git(repo, "commit", "-qm", "hang")
    task_dir = make_task(
        repo, eval_command=[sys.executable, "hang.py"], correctness_command=[], timeout_s=1.0
    )
    # The 1 s timeout, not the 60 s sleep, ends the command: without it no CommandTimeoutError is raised.
    with pytest.raises(CommandTimeoutError) as err:
        evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    assert "about to hang" in err.value.stderr_tail
    assert not (task_dir / "baseline.json").exists()
    pid = int((repo / "child.pid").read_text())
    wait_until(lambda: process_gone(pid), "the grandchild to die with the process group")


def test_bad_inputs_are_typed(repo: Path, tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgumentError, match="shell string"):
        make_task(repo, eval_command=["python bench.py | tee log"])
    with pytest.raises(InputFileError, match="does not exist"):
        make_task(repo, allowed_file=["nope.py"])
    with pytest.raises(InputFileError, match=r"no task\.json"):
        evaluate(EvaluateRequest(task=str(tmp_path / "missing")))
    cli = run_cli(
        "task",
        "create",
        "--name",
        "x",
        "--eval-command",
        "python bench.py",
        "--metric-regex",
        "t: ([0-9]+)",
        "--allowed-file",
        "kernel.py",
        "--workdir",
        str(repo),
    )
    assert cli.code == 2 and "shell string" in cli.err
    task_dir = make_task(repo)
    cli = run_cli("eval", str(task_dir))
    assert cli.code == 3 and "NEEDS_BASELINE" in cli.out and "refresh-baseline" in cli.out
    # dirty tree refused as a baseline
    set_kernel(repo, cost=90.0)
    with pytest.raises(StateError, match="uncommitted"):
        evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    # broken baseline: correctness fails, typed, tail carried, no baseline written
    set_kernel(repo, broken=True)
    git(repo, "commit", "-qam", "broken")
    with pytest.raises(CorrectnessFailedError) as err:
        evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    assert "max abs error" in err.value.stderr_tail
    assert not (task_dir / "baseline.json").exists()


def test_crash_mid_eval_leaves_no_partial_files(repo: Path, tmp_path: Path) -> None:
    task_dir = make_task(repo, correctness_command=[])
    baseline(task_dir)
    marker = tmp_path / "runs.txt"
    set_kernel(repo, cost=80.0)
    (repo / "kernel.py").write_text(
        (repo / "kernel.py").read_text()
        # The second measured run parks until the test kills the eval (its parent), so the kill lands
        # mid-measurement; then it exits on its own (it runs in its own session, out of the killed group).
        + f"import os, time\nopen({str(marker)!r}, 'a').write('x')\n"
        + f"parent = os.getppid()\nwhile len(open({str(marker)!r}).read()) >= 2 and os.getppid() == parent:\n"
        + "    time.sleep(0.02)\n"
    )
    before = sorted(p.name for p in task_dir.iterdir())
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelpilot", "eval", str(task_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_until(lambda: marker.exists() and len(marker.read_text()) >= 2, "the second measured run")
    assert proc.poll() is None  # killed mid-measurement
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # no result.json, no ledger line, no temp file (the baseline tree is a cache of the baseline commit)
    after = sorted(p.name for p in task_dir.iterdir() if p.name != ".baseline-tree")
    assert after == before
    assert not (task_dir / "result.json").exists() and not (task_dir / "ledger.jsonl").exists()


def test_stale_baseline_needs_refresh(repo: Path) -> None:
    task_dir = make_task(repo, correctness_command=[])
    baseline(task_dir)
    make_task(repo, correctness_command=[], metric_regex=r"time_us: ([0-9.]+)\s*$", overwrite=True)
    r = candidate(task_dir)
    assert r["status"] == "needs_baseline" and "stale" in r["output_tail"]  # type: ignore[operator]


def test_baseline_from_another_gpu_needs_refresh(repo: Path) -> None:
    task_dir = make_task(repo, correctness_command=[])
    baseline(task_dir)
    data = json.loads((task_dir / "baseline.json").read_text())
    data["environment"]["gpus"] = [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}]
    (task_dir / "baseline.json").write_text(json.dumps(data))
    r = candidate(task_dir)
    assert r["status"] == "needs_baseline" and "H100" in r["output_tail"]  # type: ignore[operator]


def test_candidate_eval_is_recorded_in_the_experiment_database(repo: Path, tmp_path: Path) -> None:
    from kernelpilot.experiments.api import ExpGetRequest
    from kernelpilot.experiments.ops import get

    task_dir = make_task(repo)
    baseline(task_dir)
    set_kernel(repo, cost=60.0)
    git(repo, "commit", "-qam", "faster")
    db = tmp_path / "exp.db"
    out = evaluate(EvaluateRequest(task=str(task_dir), record_db=str(db), change="cost 100 -> 60"))
    assert out.record is not None and out.record.status == "improved"
    assert len(out.recorded_ids) == 1
    rec = get(ExpGetRequest(db=str(db), id=out.recorded_ids[0])).record
    assert rec.status == "success" and rec.operator == "toy"
    assert rec.score == pytest.approx(out.record.speedup)
    assert rec.summary.startswith("cost 100 -> 60")
    assert rec.raw_result["method"] == "paired" and rec.raw_result["pairs"] == out.record.pairs
    assert "paired" in (rec.description.result or "")


def test_workspace_bookkeeping_is_not_out_of_scope(tmp_path: Path) -> None:
    """In a kernelpilot workspace, memory/, plans/, reports/ changes never make an eval out_of_scope."""
    from kernelpilot.workspace.core import init_workspace
    from kernelpilot.workspace.models import InitWorkspaceRequest

    kernel = tmp_path / "kernel.py"
    kernel.write_text("COST_US = 100.0\n")
    ws = tmp_path / "ws" / "toy"
    init_workspace(
        InitWorkspaceRequest(
            name="toy",
            kernel=str(kernel),
            platform="H100",
            framework="python",
            root=str(tmp_path / "ws"),
            allow_tbd=True,
        )
    )
    code = "import kernel, random; print(f'time_us: {kernel.COST_US * (1 + random.uniform(-1e-3, 1e-3))}')"
    res = create_task(
        CreateTaskRequest.model_validate(
            {
                "name": "toy",
                "eval_command": [sys.executable, "-c", code],
                "metric_regex": r"time_us: ([0-9.]+)",
                "allowed_file": ["kernel.py"],
                "workdir": str(ws),
                "runs": 5,
            }
        )
    )
    task_dir = ws / res.task_dir
    baseline(task_dir)
    (ws / "kernel.py").write_text("COST_US = 60.0\n")
    (ws / "plans" / "v1.md").write_text("# plan\n")
    (ws / "memory" / "notes.txt").write_text("scratch\n")
    assert candidate(task_dir)["status"] == "improved"
    (ws / "extra.py").write_text("x = 1\n")
    out = candidate(task_dir)
    assert out["status"] == "out_of_scope" and out["changed_files"] == ["extra.py", "kernel.py"]


SPEC_KERNEL = """import helper

EXTRA = {extra}


def make():
    def run():
        s = 0
        for i in range(helper.N + EXTRA):
            s += i

    return run
"""


def test_time_spec_task_is_timed_paired_against_the_baseline_commit(tmp_path: Path) -> None:
    """Both trees hold kern.py importing helper.py; the baseline side must run the baseline commit's code."""
    repo = tmp_path / "spec"
    repo.mkdir()
    (repo / "kern.py").write_text(SPEC_KERNEL.format(extra=0))
    (repo / "helper.py").write_text("N = 3000\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    made = create_task(
        CreateTaskRequest(name="spec", time_spec="kern.py:make", allowed_file=["kern.py"], workdir=str(repo))
    )
    task_dir = repo / made.task_dir
    assert json.loads((task_dir / "task.json").read_text())["time_spec"] == "kern.py:make"
    evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    (repo / "kern.py").write_text(SPEC_KERNEL.format(extra=600))  # 20 % more work
    r = candidate(task_dir)
    assert r["method"] == "paired" and r["status"] == "regressed", r["output_tail"]
    assert r["ratio_median"] == pytest.approx(1.2, rel=0.08)
    assert r["pairs"] >= 16 and r["clocks"]["source"] == "none"  # type: ignore[index,operator]
    assert "EXTRA = 0" in (task_dir / ".baseline-tree" / "kern.py").read_text()
    assert r["changed_files"] == ["kern.py"]  # the baseline tree inside the task folder is not a change
    shown = ledger_show(LedgerRequest(task=str(task_dir))).render_text()
    assert "paired" in shown and f"{r['ratio_median']:.4f}" in shown


def test_a_dirty_baseline_falls_back_to_unpaired_and_says_why(repo: Path) -> None:
    task_dir = make_task(repo)
    set_kernel(repo, cost=100.0)
    (repo / "kernel.py").write_text((repo / "kernel.py").read_text() + "# dirty\n")
    evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True, allow_dirty_baseline=True))
    set_kernel(repo, cost=80.0)
    r = candidate(task_dir)
    assert r["method"] == "unpaired" and r["status"] == "improved" and r["ratio_median"] is None
    assert "uncommitted changes" in r["output_tail"]  # type: ignore[operator]
    assert not (task_dir / ".baseline-tree").exists()


def test_a_command_that_cannot_run_in_the_baseline_tree_falls_back_to_unpaired(repo: Path) -> None:
    """The eval command needs an untracked file (a build product) the baseline commit does not hold."""
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore build")
    (repo / "build").mkdir()
    here = "os.path.dirname(os.path.abspath(__file__))"
    up = f"os.path.dirname({here})"  # build/bench.py imports kernel.py from the repository root
    (repo / "build" / "bench.py").write_text((repo / "bench.py").read_text().replace(here, up))
    task_dir = make_task(repo, eval_command=[sys.executable, "build/bench.py"])
    baseline(task_dir)
    set_kernel(repo, cost=80.0)
    r = candidate(task_dir)
    assert r["method"] == "unpaired" and r["status"] == "improved"
    assert "does not run in the baseline tree" in r["output_tail"]  # type: ignore[operator]
