"""A task timed by `kernelpilot time` (--time-spec): the eval argv, the named timing mode, a real eval run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.tasks.create import create_task
from kernelpilot.tasks.evaluate import evaluate
from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
GIT_ENV["GIT_COMMITTER_EMAIL"] = "t@e"

FACTORY = (
    "def make():\n    total = [0]\n    def run():\n        total[0] += sum(range(2000))\n    return run\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "kern.py").write_text(FACTORY)
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=r, env=GIT_ENV, check=True, capture_output=True)
    return r


def test_time_spec_task_runs_kernelpilot_time_and_names_the_mode(repo: Path) -> None:
    made = create_task(
        CreateTaskRequest(
            name="k", time_spec="kern.py:make", timing_mode="warm", allowed_file=["kern.py"],
            workdir=str(repo), runs=2, warmup=0,
        )
    )  # fmt: skip
    t = made.task
    assert t.timing_mode == "warm" and t.metric.json_key == "stats.median" and t.metric.name == "warm_time_us"
    assert t.eval_command[1:] == [
        "-m", "kernelpilot", "--json", "time", "kern.py:make", "--timing", "warm", "--verdict", "warm",
        "--no-kernels",
    ]  # fmt: skip
    task_md = (repo / made.task_md).read_text()
    assert "**warm** GPU time" in task_md
    base = evaluate(EvaluateRequest(task=str(repo / made.task_dir), refresh_baseline=True))
    assert base.baseline is not None and len(base.baseline.samples) == 2
    assert all(s > 0 for s in base.baseline.samples)


def test_time_spec_excludes_an_eval_command(repo: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="replaces --eval-command"):
        create_task(
            CreateTaskRequest(
                name="k", time_spec="kern.py:make", eval_command=["python", "b.py"], allowed_file=["kern.py"],
                workdir=str(repo),
            )
        )  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="--time-spec"):
        create_task(CreateTaskRequest(name="k", allowed_file=["kern.py"], workdir=str(repo)))
