"""The contract `workload isolate` writes passes `kernelpilot eval --refresh-baseline` on the CPU with the
written factory's call as the baseline, and a wrong candidate is rejected by it (the contract checks)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.needs import needs_module

from kernelpilot.tasks.create import create_task
from kernelpilot.tasks.evaluate import evaluate
from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest
from kernelpilot.workload.isolate import isolate_workload
from kernelpilot.workload.models import WorkloadIsolateRequest

needs_module("torch", "pip install torch==2.13.0 (the CPU wheel; .ci/run installs it)")

TRACE = Path(__file__).resolve().parent.parent / "fixtures" / "workload" / "h100_decode_trace.json"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
GIT_ENV["GIT_COMMITTER_EMAIL"] = "t@e"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True)


def test_the_isolated_gemm_contract_refreshes_its_baseline_and_rejects_a_wrong_candidate(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    # row 2: the decode GEMM at its 8x1024 @ 1024x2816 shape (the MLP's up/gate projections)
    iso = isolate_workload(WorkloadIsolateRequest(path=str(TRACE), kernel="2", out_dir=str(repo), name="up"))
    assert iso.contract is not None and Path(iso.bench).name == "bench_up.py"
    assert iso.called_op == "torch.ops.aten.mm.default" and iso.shape.dims == [[8, 1024], [1024, 2816]]
    (repo / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "isolated")
    made = create_task(
        CreateTaskRequest(
            name="up", contract="contract_up.json", allowed_file=["bench_up.py"], workdir=str(repo),
            runs=2, warmup=0, cv_threshold=10.0, timing_mode="warm",
        )
    )  # fmt: skip
    assert made.task.contract is not None
    task = repo / made.task_dir
    base = evaluate(EvaluateRequest(task=str(task), refresh_baseline=True))
    assert base.baseline is not None and len(base.baseline.samples) == 2
    bench = repo / "bench_up.py"
    honest = bench.read_text()
    bench.write_text(honest.replace("torch.ops.aten.mm.default(x, mat2)", "(x @ mat2) * 1.1"))
    assert bench.read_text() != honest
    wrong = evaluate(EvaluateRequest(task=str(task), change="scale the output"))
    r = wrong.record
    assert r is not None and r.status.startswith("rejected_") and r.rejection is not None, wrong.render_text()
    assert r.rejection.check == "semantic" and "out of tolerance" in r.rejection.evidence
