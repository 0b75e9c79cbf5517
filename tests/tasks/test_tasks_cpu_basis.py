"""A time_spec task timed where torch has no GPU says its numbers are CPU wall time (issue 42: the eval
named them `cold_time_us` and blamed a missing NVML for the clocks, on a machine with no GPU)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.tasks.test_tasks_time_spec import FACTORY, GIT_ENV

from kernelpilot.tasks.create import create_task
from kernelpilot.tasks.evaluate import cpu_fallback_basis, evaluate
from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest, Task

H100 = [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}]


def _task(timing_mode: str | None) -> Task:
    doc = {
        "name": "k", "eval_command": ["{python}", "bench.py"], "allowed_files": ["k.py"], "workdir": ".",
        "metric": {"name": "cold_time_us", "direction": "lower", "unit": "us", "json_key": "stats.median"},
        "timing_mode": timing_mode, "created": "2026-12-05T00:00:00Z",
    }  # fmt: skip
    return Task.model_validate(doc)


@pytest.mark.parametrize(
    ("timing_mode", "gpus", "torch", "want"),
    [
        ("cold", [], "2.13.0+cpu", "CPU wall time, not GPU time: no GPU on this machine"),
        ("cold", H100, "2.13.0+cpu", "CPU wall time, not GPU time: torch 2.13.0+cpu has no GPU support"),
        ("cold", H100, "2.11.0+cu128", ""),
        (None, [], "2.13.0+cpu", ""),  # a command metric is whatever the command prints
    ],
)
def test_the_basis_follows_what_kernelpilot_time_can_use(
    timing_mode: str | None, gpus: list[dict[str, str]], torch: str, want: str
) -> None:
    got = cpu_fallback_basis(_task(timing_mode), {"gpus": gpus, "versions": {"torch": torch}})
    assert got.startswith(want) and bool(got) == bool(want)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    (r / "kern.py").write_text(FACTORY)
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=r, env=GIT_ENV, check=True, capture_output=True)
    return r


def test_an_eval_here_labels_its_numbers_by_what_timed_them(repo: Path) -> None:
    """A real baseline and candidate eval on this machine: the label is set exactly when the basis rule says
    `kernelpilot time` ran on the CPU (on a GPU machine it stays empty and the clocks note is NVML's)."""
    made = create_task(
        CreateTaskRequest(
            name="k", time_spec="kern.py:make", allowed_file=["kern.py"], workdir=str(repo), runs=2
        )
    )
    task_dir = str(repo / made.task_dir)
    subprocess.run(["git", "add", "."], cwd=repo, env=GIT_ENV, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", "task"], cwd=repo, env=GIT_ENV, check=True, capture_output=True)
    base = evaluate(EvaluateRequest(task=task_dir, refresh_baseline=True))
    assert base.baseline is not None
    want = cpu_fallback_basis(made.task, base.baseline.environment)
    assert base.baseline.metric_basis == want
    res = evaluate(EvaluateRequest(task=task_dir))
    rec = res.record
    assert rec is not None and rec.metric_basis == cpu_fallback_basis(made.task, rec.environment)
    text = res.render_text()
    if want:  # this machine timed on the CPU: say so, and no NVML excuse for the clocks
        assert f"cold_time_us here is {want}" in text and f"cold_time_us here is {want}" in base.render_text()
        assert rec.clocks is not None and rec.clocks.note == "none: no GPU to read clocks from (CPU timer)"
        assert "NVML" not in text
    else:
        assert "here is CPU wall time" not in text
