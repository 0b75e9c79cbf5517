"""Portable tasks: task.json names no machine's paths, so a task created with one virtual environment in one
checkout evaluates from another virtual environment in a copy at another path; and a second task in the same
repository never counts the first task's bookkeeping as out-of-scope edits."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from tests.tasks.test_tasks_eval import FIXTURE, baseline, candidate, git, make_task, set_kernel

from kernelpilot.tasks.create import PYTHON_TOKEN, create_task, interpreter_argv
from kernelpilot.tasks.models import CreateTaskRequest

SERVER = Path(__file__).resolve().parents[2] / "server"

# bench.py of the sample task, plus a line that writes down which interpreter ran it
WHO = "import sys, pathlib; pathlib.Path('ran_with.txt').write_text(sys.prefix)\n"


def _venv(where: Path) -> Path:
    """A virtual environment at `where` that imports this checkout's kernelpilot and the test run's
    dependencies (a .pth file: no network, no build), like a second install on another machine."""
    venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True).create(where)
    py = where / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "kernelpilot-test.pth").write_text(
        "\n".join([str(SERVER), *site.getsitepackages()]) + "\n", encoding="utf-8"
    )
    return py


def _kp(py: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(py), "-m", "kernelpilot", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _walk_strings(doc: object) -> list[str]:
    if isinstance(doc, dict):
        return [s for v in doc.values() for s in _walk_strings(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in _walk_strings(v)]
    return [doc] if isinstance(doc, str) else []


def test_task_created_in_one_venv_evaluates_from_another_at_another_path(tmp_path: Path) -> None:
    py_a, py_b = _venv(tmp_path / "venv-a"), _venv(tmp_path / "elsewhere" / "venv-b")
    repo = tmp_path / "machine-a" / "repo"
    shutil.copytree(FIXTURE, repo)
    (repo / "bench.py").write_text(WHO + (FIXTURE / "bench.py").read_text())
    (repo / ".gitignore").write_text("ran_with.txt\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    made = _kp(
        py_a, repo, "task", "create", "--name", "port", "--workdir", ".", "--allowed-file", "kernel.py",
        "--eval-command", str(py_a), "--eval-command", str(repo / "bench.py"),
        "--correctness-command", json.dumps([str(py_a), "check.py"]),
        "--metric-regex", r"time_us: ([0-9.]+)", "--runs", "5",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    task_json = repo / ".kernelpilot" / "tasks" / "port" / "task.json"
    doc = json.loads(task_json.read_text())
    assert doc["eval_command"] == [PYTHON_TOKEN, "bench.py"]
    assert doc["correctness_commands"] == [[PYTHON_TOKEN, "check.py"]]
    assert doc["workdir"] == "../../.."
    absolute = [s for s in _walk_strings(doc) if s.startswith("/") or str(tmp_path) in s]
    assert not absolute, f"task.json holds machine paths: {absolute}"
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "task")
    # "another machine": a copy of the repository at another path, evaluated with venv B only
    moved = tmp_path / "machine-b" / "checkout"
    shutil.copytree(repo, moved)
    task_b = moved / ".kernelpilot" / "tasks" / "port"
    out = _kp(py_b, moved, "eval", str(task_b), "--refresh-baseline")
    assert out.returncode == 0, out.stderr
    assert (moved / "ran_with.txt").read_text() == str(tmp_path / "elsewhere" / "venv-b")
    set_kernel(moved, cost=60.0)
    out = _kp(py_b, moved, "--json", "eval", str(task_b))
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)["record"]
    assert record["status"] == "improved" and record["changed_files"] == ["kernel.py"]
    assert not (repo / "ran_with.txt").exists()  # the original checkout was never touched


def test_time_spec_task_stores_the_interpreter_token(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    res = create_task(
        CreateTaskRequest(name="t", time_spec="bench.py:make", allowed_file=["kernel.py"], workdir=str(repo))
    )
    argv = res.task.eval_command
    assert argv[:3] == [PYTHON_TOKEN, "-m", "kernelpilot"] and "bench.py:make" in argv
    assert interpreter_argv(argv)[0] == sys.executable
    assert (
        f"`{PYTHON_TOKEN}` = the Python running kernelpilot" in (repo / res.task_dir / "TASK.md").read_text()
    )


def test_task_written_before_the_cli_moved_still_runs(tmp_path: Path) -> None:
    """task.json files written when the CLI was `kernelpilot.cli` name it; they run as `-m kernelpilot`."""
    old = [PYTHON_TOKEN, "-m", "kernelpilot.cli", "--json", "time", "bench.py:make"]
    argv = interpreter_argv(old)
    assert argv[:3] == [sys.executable, "-m", "kernelpilot"]
    assert interpreter_argv(["python3", "kernelpilot.cli"]) == ["python3", "kernelpilot.cli"]  # only after -m
    out = subprocess.run(
        [*argv[:3], "--version"], capture_output=True, text=True, env={"PYTHONPATH": str(SERVER)}
    )
    assert out.returncode == 0 and out.stdout.strip().startswith("kernelpilot"), out.stderr


@pytest.mark.parametrize("where", ["default", "custom"])
def test_second_task_never_counts_the_first_tasks_bookkeeping(tmp_path: Path, where: str) -> None:
    """Task A's result.json, ledger.jsonl and baseline.json change while task B is evaluated: B's scope
    check ignores them (tasks under .kernelpilot/ and task folders elsewhere alike)."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    extra = {} if where == "default" else {"task_dir": str(repo / "bench-tasks" / "a")}
    task_a = make_task(repo, name="a", **extra)
    task_b = make_task(repo, name="b")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "tasks")
    baseline(task_a)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "baseline a")
    baseline(task_b)
    set_kernel(repo, cost=60.0)
    assert candidate(task_a)["status"] == "improved"  # writes a's result.json and ledger line
    out = candidate(task_b)
    assert out["status"] == "improved" and out["changed_files"] == ["kernel.py"]
    (repo / "other.py").write_text("x = 1\n")  # a real out-of-scope edit is still caught
    out = candidate(task_b)
    assert out["status"] == "out_of_scope" and out["changed_files"] == ["kernel.py", "other.py"]
