"""A contract task end to end through `kernelpilot eval` on the CPU, judged by the isolated judge
(kernelpilot.judge: the candidate in its own runner process, the checks, timing and verdict in the judge's):
typed rejections in result.json, the ledger and the experiment database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.experiments.api import ExpFailuresRequest, ExpGetRequest
from kernelpilot.experiments.ops import failures, get
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.guard.errors import ContractError
from kernelpilot.tasks.create import create_task
from kernelpilot.tasks.evaluate import evaluate
from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest

CASES = Path(__file__).parent / "cases"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
GIT_ENV["GIT_COMMITTER_EMAIL"] = "t@e"
CONTRACT = {
    "module": "contract_axpy.py",
    "candidate": "kernel.py:axpy",
    "shapes": [{"n": 4096}, {"n": 1000}],
    "dtype": "fp32",
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True)


def _contract_task(root: Path, baseline: str, shapes: list[dict[str, int]] | None = None) -> Path:
    """A git repository whose kernel.py is `baseline`, a contract task on it and its baseline refreshed."""
    repo = root / "repo"
    repo.mkdir()
    shutil.copy(CASES / "contract_axpy.py", repo)
    shutil.copy(CASES / baseline, repo / "kernel.py")
    (repo / "contract.json").write_text(json.dumps({**CONTRACT, "shapes": shapes or CONTRACT["shapes"]}))
    (repo / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    made = create_task(
        CreateTaskRequest(
            name="axpy", contract="contract.json", allowed_file=["kernel.py"], workdir=str(repo), runs=2,
            warmup=0, cv_threshold=10.0, timing_mode="warm",
        )
    )  # fmt: skip
    assert made.task.contract is not None and "--observe" in made.task.eval_command
    assert "GUARDED by the reference contract" in (repo / made.task_md).read_text()
    task_dir = repo / made.task_dir
    base = evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    assert base.baseline is not None and len(base.baseline.samples) == 2, base.message
    return task_dir


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _contract_task(tmp_path_factory.mktemp("guarded"), "honest_axpy.py")


@pytest.fixture(scope="module")
def slow_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a ~1 ms call: the judge times each call through a pipe round trip (~0.1 ms), which a 4096-element
    # axpy (~10 us) would drown
    return _contract_task(
        tmp_path_factory.mktemp("guarded_slow"), "slow_axpy.py", [{"n": 1 << 20}, {"n": 1000}]
    )


HACKS = [
    ("cached_axpy.py", "rejected_cached_output", "semantic", "earlier call with different input values"),
    ("identity_axpy.py", "rejected_constant_output", "semantic", "equals input 1 bitwise"),
    ("constant_axpy.py", "rejected_constant_output", "semantic", "constant 0.0"),
    ("inplace_axpy.py", "rejected_input_mutation", "semantic", "input(s) [0] changed"),
    ("lowp_axpy.py", "rejected_precision", "semantic", "exactly tf32/fp16 values"),
    ("tiled_axpy.py", "rejected_shape_specific", "semantic", "correct on the timed shape"),
    ("lazy_axpy.py", "rejected_lazy_output", "semantic", "not a plain numpy.ndarray"),
    ("noisy_axpy.py", "rejected_nondeterministic", "semantic", "different outputs"),
    ("timer_axpy.py", "rejected_timer_disagree", "observation", "replaced or skewed its clock"),
]
# Hacks of the in-process guard that the isolated judge leaves with nothing to exploit: they run as honest
# code at honest speed (a thread joined before return, a memo of pointers and first values that misses on
# every call's fresh values, frame sniffing for a timer that is not in the candidate's process).
NEUTRALIZED = ["thread_axpy.py", "memo_fp_axpy.py", "timeraware_axpy.py", "timerlate_axpy.py"]


@pytest.mark.parametrize(("candidate", "status", "check", "evidence"), HACKS, ids=[h[0] for h in HACKS])
def test_a_hack_is_rejected_and_recorded_as_a_failure_with_its_reason(
    task: Path, tmp_path: Path, candidate: str, status: str, check: str, evidence: str
) -> None:
    repo = task.parent.parent.parent
    shutil.copy(CASES / candidate, repo / "kernel.py")
    db = str(tmp_path / "exp.sqlite")
    res = evaluate(EvaluateRequest(task=str(task), record_db=db, change=f"try {candidate}"))
    r = res.record
    assert r is not None and r.status == status and r.guarded, r.output_tail
    assert r.rejection is not None and r.rejection.check == check and r.speedup is None
    assert evidence in r.rejection.evidence and r.ratio_median is None
    assert res.cli_exit_code() == 3
    text = res.render_text()
    assert "REJECTED by the guard" in text and "never a win" in text
    line = json.loads((task / "ledger.jsonl").read_text().splitlines()[-1])
    assert line["status"] == status and line["rejection"]["evidence"] == r.rejection.evidence
    listed = failures(ExpFailuresRequest(db=db))
    assert listed.total == 1
    rec = listed.records[0]
    assert rec.status.value == "incorrect" and "rejected" in rec.tags and rec.is_buggy
    assert rec.error_message is not None and rec.error_message.startswith(f"{status} ({check} check): ")
    assert status in listed.render_text()


@pytest.mark.parametrize("candidate", NEUTRALIZED)
def test_an_in_process_hack_has_nothing_to_exploit(task: Path, candidate: str) -> None:
    repo = task.parent.parent.parent
    shutil.copy(CASES / candidate, repo / "kernel.py")
    r = evaluate(EvaluateRequest(task=str(task))).record
    assert r is not None and r.rejection is None and r.method == "paired", r.output_tail
    assert r.status in ("improved", "regressed", "neutral")
    assert r.judge is not None and sum(r.judge["checked_timed_calls"].values()) == 2 * (r.pairs or 0)


def test_the_sandbox_refuses_a_write_into_the_baseline_tree(task: Path) -> None:
    """The runner writes only where a kernel needs to (runner.sandbox): the tamper attack fails to import."""
    repo = task.parent.parent.parent
    before = (task / ".baseline-tree" / "kernel.py").stat() if (task / ".baseline-tree").exists() else None
    shutil.copy(CASES / "tamper_axpy.py", repo / "kernel.py")
    r = evaluate(EvaluateRequest(task=str(task))).record
    assert r is not None and r.status == "correctness_failed" and "PermissionError" in r.output_tail, (
        r.output_tail
    )
    if before is not None:
        after = (task / ".baseline-tree" / "kernel.py").stat()
        assert (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns)


def test_a_write_the_sandbox_lets_through_is_rejected_and_put_back(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the sandbox allows it (KERNELPILOT_RUNNER_WRITABLE here; a task beneath a cache folder, or no
    Landlock), the tamper check still holds: the rewritten baseline tree is rejected_baseline_tampered."""
    from kernelpilot.runner.sandbox import WRITABLE_ENV

    monkeypatch.setenv(WRITABLE_ENV, str(task))
    repo = task.parent.parent.parent
    shutil.copy(CASES / "tamper_axpy.py", repo / "kernel.py")
    r = evaluate(EvaluateRequest(task=str(task))).record
    assert r is not None and r.status == "rejected_baseline_tampered", r.output_tail
    assert r.rejection is not None and "kernel.py (rewritten)" in r.rejection.evidence


WRONG_WHEN_TIMED = '''"""Hack: right for its first 12 calls (the checks), then off by one."""
_calls = [0]


def axpy(x, y):
    _calls[0] += 1
    return 2.5 * x + y + (1.0 if _calls[0] > 12 else 0.0)
'''


def test_a_candidate_wrong_only_when_timed_is_rejected(task: Path) -> None:
    """Every timed call's values are new; one call per batch, drawn after it returned, is checked against
    the float64 reference in the judge."""
    repo = task.parent.parent.parent
    (repo / "kernel.py").write_text(WRONG_WHEN_TIMED)
    r = evaluate(EvaluateRequest(task=str(task))).record
    assert r is not None and r.status == "rejected_timed_output", r.output_tail
    assert r.rejection is not None and "drawn after its batch returned" in r.rejection.evidence


def test_an_honest_candidate_gets_a_verdict(task: Path) -> None:
    repo = task.parent.parent.parent
    shutil.copy(CASES / "fused_axpy.py", repo / "kernel.py")
    r = evaluate(EvaluateRequest(task=str(task))).record
    assert r is not None and r.status in ("improved", "regressed", "neutral"), r.output_tail
    assert r.guarded and r.rejection is None and r.speedup is not None and r.method == "paired"
    assert r.physics is None  # no GPU: no roofline floor to hold the time against
    assert r.judge is not None and r.judge["status"] == "passed"
    assert all("runner" in n for n in r.judge["notes"]) and r.pairs == 2
    assert "checked calls passed on 2 shape(s)" in r.correctness and "isolated judge" in r.correctness


def test_an_honest_faster_candidate_is_improved_by_the_paired_ratio(slow_task: Path, tmp_path: Path) -> None:
    """The baseline commit (eight wasted passes) and the candidate timed in interleaved batches."""
    repo = slow_task.parent.parent.parent
    shutil.copy(CASES / "honest_axpy.py", repo / "kernel.py")
    db = str(tmp_path / "exp.sqlite")
    res = evaluate(
        EvaluateRequest(task=str(slow_task), record_db=db, change="drop the wasted passes", runs=12)
    )
    r = res.record
    assert r is not None and r.status == "improved" and r.method == "paired", r.output_tail
    assert r.guarded and r.rejection is None and r.pairs == 12
    assert r.ratio_median is not None and r.ratio_ci is not None and r.ratio_ci[1] < 1.0
    assert r.speedup is not None and r.speedup == pytest.approx(1.0 / r.ratio_median)
    assert r.candidate_median is not None and r.baseline_median is not None
    assert r.candidate_median < r.baseline_median
    assert "range(8)" in (slow_task / ".baseline-tree" / "kernel.py").read_text()  # the baseline side's code
    assert "paired (baseline commit and candidate timed together" in res.render_text()
    line = json.loads((slow_task / "ledger.jsonl").read_text().splitlines()[-1])
    assert line["method"] == "paired" and line["status"] == "improved" and line["guarded"] is True
    rec = get(ExpGetRequest(db=db, id=res.recorded_ids[0])).record
    assert rec.raw_result["method"] == "paired" and rec.raw_result["pairs"] == r.pairs
    assert "paired" in rec.description.result


def test_a_contract_task_with_a_dirty_baseline_is_timed_unpaired_and_says_why(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    task_dir = _contract_task(tmp_path, "honest_axpy.py")
    (repo / "kernel.py").write_text((repo / "kernel.py").read_text() + "# dirty\n")
    evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True, allow_dirty_baseline=True))
    shutil.copy(CASES / "fused_axpy.py", repo / "kernel.py")
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.method == "unpaired" and r.guarded and r.rejection is None, r.output_tail
    assert r.status in ("improved", "regressed", "neutral", "unstable")
    assert "uncommitted changes" in r.output_tail and r.ratio_median is None
    assert r.judge is not None and list(r.judge["calls_per_batch"]) == ["candidate"]


def test_a_free_form_task_is_labelled_unguarded(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text("print('time_us: 5.0')\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    made = create_task(
        CreateTaskRequest(
            name="free", eval_command=["python3", "bench.py"], metric_regex="time_us: ([0-9.]+)",
            allowed_file=["bench.py"], workdir=str(repo), runs=2, warmup=0,
        )
    )  # fmt: skip
    assert "UNGUARDED" in (repo / made.task_md).read_text()
    task_dir = str(repo / made.task_dir)
    evaluate(EvaluateRequest(task=task_dir, refresh_baseline=True))
    res = evaluate(EvaluateRequest(task=task_dir))
    assert res.record is not None and not res.record.guarded
    assert "unguarded: correctness is only what the task's commands check" in res.render_text()


def test_create_refuses_a_bad_contract(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(CASES / "contract_axpy.py", repo)
    shutil.copy(CASES / "honest_axpy.py", repo / "kernel.py")
    (repo / "c.json").write_text(json.dumps(CONTRACT))
    base = {"name": "t", "workdir": str(repo), "allowed_file": ["kernel.py"]}
    with pytest.raises(InvalidArgumentError, match="never the inputs factory or the reference"):
        create_task(CreateTaskRequest(**{**base, "allowed_file": ["*.py"]}, contract="c.json"))
    with pytest.raises(InvalidArgumentError, match="--contract replaces"):
        create_task(CreateTaskRequest(**base, contract="c.json", time_spec="kernel.py:axpy"))
    with pytest.raises(InputFileError, match=r"contract file 'nope\.json' not found"):
        create_task(CreateTaskRequest(**base, contract="nope.json"))
    (repo / "bad.json").write_text(json.dumps({**CONTRACT, "shapes": []}))
    with pytest.raises(ContractError, match="shapes"):
        create_task(CreateTaskRequest(**base, contract="bad.json"))
    (repo / "gone.json").write_text(json.dumps({**CONTRACT, "candidate": "missing.py:axpy"}))
    with pytest.raises(InputFileError, match=r"candidate file 'missing\.py'"):
        create_task(CreateTaskRequest(**base, contract="gone.json"))


def test_task_create_takes_the_contract_through_the_cli(run_cli: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(CASES / "contract_axpy.py", repo)
    shutil.copy(CASES / "honest_axpy.py", repo / "kernel.py")
    (repo / "c.json").write_text(json.dumps(CONTRACT))
    out = run_cli(
        "--json", "task", "create", "--name", "cli", "--contract", "c.json", "--allowed-file", "kernel.py",
        "--workdir", str(repo),
    )  # fmt: skip
    assert out.code == 0, out.err
    task = json.loads(out.out)["task"]
    assert task["contract"]["candidate"] == "kernel.py:axpy" and "--observe" in task["eval_command"]
    bad = run_cli("task", "create", "--name", "cli2", "--contract", "c.json", "--allowed-file", "*.py",
                  "--workdir", str(repo))  # fmt: skip
    assert bad.code != 0 and "never the inputs factory or the reference" in bad.err


def test_a_baseline_the_guard_rejects_says_why_in_the_error(tmp_path: Path) -> None:
    """On the H100 the suite's fp32 baseline read only `the guard did not pass the baseline
    (rejected_side_stream)`: which check and which numbers were lost. The error now carries the evidence."""
    from kernelpilot.tasks.errors import CorrectnessFailedError

    with pytest.raises(CorrectnessFailedError) as got:
        _contract_task(tmp_path, "cached_axpy.py")
    msg = got.value.message
    assert "rejected_cached_output: " in msg and "earlier call with different input values" in msg
    assert msg.endswith("no baseline written") and not list((tmp_path / "repo").rglob("baseline.json"))


def test_a_baseline_side_far_slower_than_its_record_is_tampered_with(tmp_path: Path) -> None:
    """The paired baseline side against baseline.json: a patched op or a rewritten file slows it; within
    1.5x + the recorded IQR (or KERNELPILOT_GUARD_BASELINE_SLOWDOWN's factor) it is not."""
    from kernelpilot.guard.steps import SLOWDOWN_ENV, baseline_tampered, tree_state

    tree = tmp_path / "task" / ".baseline-tree"
    tree.mkdir(parents=True)
    (tree / "kernel.py").write_text("def gemm(a, b):\n    return a @ b\n")
    (tmp_path / "task" / "baseline.json").write_text(json.dumps({"stats": {"median": 2806.0, "iqr": 2.0}}))
    before = tree_state(tree)
    assert baseline_tampered(tree, before, json.dumps({"a_stats": {"median": 2810.0}})) == ""
    why = baseline_tampered(tree, before, json.dumps({"a_stats": {"median": 22902.0}}))
    assert "8.16x the 2806.0 us baseline.json recorded" in why and "4213.0 us" in why
    cpu = json.dumps({"a_stats": {"median": 22902.0}, "verdict_mode": "cpu"})
    assert baseline_tampered(tree, before, cpu) == ""  # the host timer's noise on a shared CPU
    os.environ[SLOWDOWN_ENV] = "10"
    try:
        assert baseline_tampered(tree, before, json.dumps({"a_stats": {"median": 22902.0}})) == ""
    finally:
        del os.environ[SLOWDOWN_ENV]
    assert baseline_tampered(tree, before, None) == ""  # nothing timed: nothing to hold against
    (tree / "__pycache__").mkdir()
    import py_compile

    py_compile.compile(str(tree / "kernel.py"))  # the timing's own import writes bytecode: fine
    assert baseline_tampered(tree, before, None) == ""
    pyc = next((tree / "__pycache__").glob("kernel.*.pyc"))
    planted = compile("import time\ndef gemm(a, b):\n    time.sleep(1)\n    return a @ b\n", "k", "exec")
    import marshal

    pyc.write_bytes(pyc.read_bytes()[:16] + marshal.dumps(planted))
    assert "(bytecode that is not its source's)" in baseline_tampered(tree, before, None)
