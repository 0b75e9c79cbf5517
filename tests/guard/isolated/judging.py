"""Runs the isolated red-team corpus (corpus.py) through `kernelpilot eval` on the CPU path and judges each
outcome: used by `test_redteam.py` (one test per case) and `bench/guard_redteam.py` (the whole table).

Per contract, a git repository holds the contract module, its JSON and the contract's plain honest case as
`kernel.py` (the committed baseline, refreshed through the judge). A case is copied over `kernel.py` and
evaluated paired against that baseline, with an experiment database, so:

- an **attack** is held when it is rejected (any `rejected_*` status, or `failed`/`correctness_failed` for a
  process-level abuse that broke its own run) or accepted **without a gain**: a paired verdict other than
  `improved` against its honest twin (the baseline; a gain is a confident speed-up over the twin);
- an **honest** case is held when it gets a verdict (improved, neutral or regressed);
- every eval leaves its ledger line and its experiment record (nothing lost to a crash, hang or flood).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
GIT_ENV["GIT_COMMITTER_EMAIL"] = "t@e"
VERDICTS = ("improved", "regressed", "neutral")
PAIRS = 8
MIN_EFFECT = (
    0.05  # a gain is a confident speed-up of at least 5 % over the twin (CPU timing on a shared host)
)
TIMEOUT_S = 60.0  # one runner step (set-up or one batch): a hang is cut here
SLOW_TIMEOUT_S = 300.0  # torch.compile / load_inline compile in the set-up step


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True)


@dataclass
class Outcome:
    case: str
    kind: str
    family: int | None
    status: str
    speedup: float | None
    ci: list[float] | None
    evidence: str
    recorded: bool
    held: bool
    why: str


def task_for(root: Path, contract: str, slow: bool) -> Path:
    """The task folder of `contract` (made once per contract and timeout under `root`), baseline refreshed."""
    from kernelpilot.tasks.create import create_task
    from kernelpilot.tasks.evaluate import evaluate
    from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest

    repo = root / f"{contract}{'-slow' if slow else ''}"
    task_dir = repo / ".kernelpilot" / "tasks" / contract
    if (task_dir / "baseline.json").is_file():
        return task_dir
    repo.mkdir(parents=True)
    doc = json.loads((HERE / "contracts" / f"{contract}.json").read_text())
    shutil.copy(HERE / "contracts" / doc["module"], repo / doc["module"])
    shutil.copy(HERE / "cases" / f"honest_{contract}.py", repo / "kernel.py")
    doc["candidate"] = "kernel.py:candidate"
    (repo / "contract.json").write_text(json.dumps(doc))
    (repo / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "baseline: the honest twin")
    create_task(
        CreateTaskRequest(
            name=contract, contract="contract.json", allowed_file=["kernel.py"], workdir=str(repo),
            runs=PAIRS, warmup=1, cv_threshold=10.0, timing_mode="warm", min_effect=MIN_EFFECT,
            timeout_s=SLOW_TIMEOUT_S if slow else TIMEOUT_S,
        )
    )  # fmt: skip
    evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    return task_dir


ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # the runners' torch on one intra-op thread (below)


def run_case(root: Path, case: Any) -> Outcome:
    """Evaluate one corpus case against its contract's honest twin and judge the outcome. An attack read as
    `improved` is evaluated once more: a gain is one both evals confirm (a shared 2-core host can read one
    eval of two equal candidates as a confident 5 % speed-up; a real gain repeats). The runners' torch uses
    one intra-op thread: with its default pool, identical code read `improved` in 2 of 15 evals on this
    shared host (tests/guard/gpu_cases_cpu.py measured it), a verdict of the host, not of the judge."""
    saved = {k: os.environ.get(k) for k in ONE_THREAD}
    os.environ.update(ONE_THREAD)  # eval passes its environment to the judge and its runners
    try:
        return judged_twice(lambda: _run_once(root, case), case.kind)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def judged_twice(run_once: Callable[[], Outcome], kind: str) -> Outcome:
    """The rule both CPU suites judge by: an attack read as `improved` is evaluated again, and a gain is
    one both evals confirm (tests/guard/gpu_cases_cpu.py runs the GPU records' cases under it too)."""
    got = run_once()
    if kind == "attack" and got.status == "improved":
        again = run_once()
        if again.status != "improved":
            again.why = f"neutralized: improved once ({got.speedup}), then {again.status} ({again.speedup})"
        return again
    return got


def _run_once(root: Path, case: Any) -> Outcome:
    from kernelpilot.experiments.api import ExpListRequest
    from kernelpilot.experiments.ops import list_records
    from kernelpilot.tasks.evaluate import evaluate
    from kernelpilot.tasks.models import EvaluateRequest

    task_dir = task_for(root, case.contract, case.slow)
    repo = task_dir.parent.parent.parent
    text = (HERE / "cases" / f"{case.name}.py").read_text()
    if case.function != "candidate":
        text += f"\n\ncandidate = {case.function}\n"
    (repo / "kernel.py").write_text(text)
    db = root / f"{case.name}-{_ledger_lines(task_dir)}.sqlite"  # one database per eval
    lines_before = _ledger_lines(task_dir)
    try:
        res = evaluate(EvaluateRequest(task=str(task_dir), record_db=str(db), change=case.name))
    finally:
        shutil.copy(HERE / "cases" / f"honest_{case.contract}.py", repo / "kernel.py")
    r = res.record
    assert r is not None
    listed = list_records(ExpListRequest(db=str(db)))
    recorded = _ledger_lines(task_dir) == lines_before + 1 and listed.total == 1
    evidence = (r.rejection.evidence if r.rejection else r.output_tail)[:400]
    held, why = _judged(case, r.status, recorded)
    return Outcome(
        case.name, case.kind, case.family, r.status, r.speedup, r.speedup_ci, evidence, recorded, held, why
    )


def _ledger_lines(task_dir: Path) -> int:
    path = task_dir / "ledger.jsonl"
    return len(path.read_text().splitlines()) if path.is_file() else 0


def _judged(case: Any, status: str, recorded: bool) -> tuple[bool, str]:
    if not recorded:
        return False, "the eval left no ledger line or no experiment record"
    if case.kind == "honest":
        return status in VERDICTS, "accepted" if status in VERDICTS else f"honest case refused: {status}"
    if status.startswith("rejected_"):
        return True, "rejected"
    if status in ("failed", "correctness_failed"):
        return True, "its own run failed (typed)"
    if status == "improved":
        return False, "WIN: accepted as faster than its honest twin"
    if status in VERDICTS:
        return True, "neutralized: accepted at its honest twin's speed"
    return False, f"unexpected status {status}"
