"""A contract task's eval through the isolated judge (kernelpilot.judge; docs/guard.md, "The isolated
judge"): the request eval writes, the files it watches while the judge runs, and the record fields it takes
from the judge's signed report.

- Baseline refresh: one side, the committed tree's candidate, checked and timed; its per-call figures are
  baseline.json's samples.
- Candidate with its baseline commit checked out (`.baseline-tree`): two sides, the candidate checked, both
  timed in interleaved batches; the verdict is the median of the per-pair ratios and its bootstrap interval
  (`method: isolated-paired`).
- Candidate without a baseline tree (a baseline measured on a dirty tree): the candidate alone, against
  baseline.json's samples (`method: isolated-unpaired`).

While the judge runs, the task folder's own files and the baseline tree must not change: a candidate's
process can write files, so a change is `rejected_task_tampered` / `rejected_baseline_tampered`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kernelpilot.guard.models import Rejection
from kernelpilot.judge.models import JudgeReport, JudgeRequest, SideSpec
from kernelpilot.tasks.models import Task

# The judge's own deadline per runner step is the task's timeout; the whole judged run gets this many.
JUDGE_TIMEOUT_FACTOR = 3
TASK_FILES = ("task.json", "baseline.json", "ledger.jsonl", "result.json", "TASK.md")
OUTPUT_TAIL_CHARS = 4000


def request(
    task: Task,
    workdir: Path,
    env: dict[str, str],
    sides: list[tuple[str, Path]],
    contract_root: Path,
    runs: int,
) -> JudgeRequest:
    assert task.contract is not None
    specs = [SideSpec.model_validate({"name": name, "root": str(root)}) for name, root in sides]
    return JudgeRequest(
        contract=task.contract,
        contract_root=str(contract_root),
        allowed_files=list(task.allowed_files),
        sides=specs,
        checked=specs[-1].name,
        timing_mode=task.timing_mode,
        pairs=runs,
        warmup=max(1, task.warmup),
        timeout_s=task.timeout_s,
        env=env,
    )


def files_state(folder: Path) -> dict[str, tuple[int, int, int, int]]:
    out = {}
    for name in TASK_FILES:
        try:
            st = os.lstat(folder / name)
        except FileNotFoundError:
            continue
        out[name] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return out


def saved_files(folder: Path) -> dict[str, bytes]:
    """The task's own files, kept while the judged processes run (a candidate's process can write files)."""
    out = {}
    for name in TASK_FILES:
        path = folder / name
        if path.is_file() and not path.is_symlink():
            out[name] = path.read_bytes()
    return out


def restore(folder: Path, saved: dict[str, bytes], changed: list[str]) -> None:
    """Put back the task files a candidate changed (stored records are never lost to it)."""
    for name in changed:
        path = folder / name
        if name in saved:
            tmp = folder / f".{name}.restore-{os.getpid()}"
            tmp.write_bytes(saved[name])
            os.replace(tmp, path)  # replaces a link or a rewritten file alike
        elif path.is_file() or path.is_symlink():
            path.unlink()


def run(req: JudgeRequest, task: Task, task_dir: Path, baseline_tree: Path | None) -> JudgeReport:
    """The judge's report, turned into a rejection when the task's files or the baseline tree changed (the
    task's files are put back as they were)."""
    from kernelpilot.guard.steps import tree_changes, tree_state
    from kernelpilot.judge.launch import run_judge

    saved = saved_files(task_dir)
    before_task = files_state(task_dir)
    before_tree = tree_state(baseline_tree) if baseline_tree is not None else {}
    report = run_judge(
        req, JUDGE_TIMEOUT_FACTOR * task.timeout_s * max(1, len(task.contract.shapes) if task.contract else 1)
    )
    after_task = files_state(task_dir)
    changed = [
        n for n in sorted(set(before_task) | set(after_task)) if before_task.get(n) != after_task.get(n)
    ]
    if changed:
        restore(task_dir, saved, changed)
        return _tampered(report, "rejected_task_tampered", f"the task's own files changed while the judged "
                         f"processes ran: {', '.join(changed)}")  # fmt: skip
    if baseline_tree is not None:
        moved = tree_changes(baseline_tree, before_tree)
        if moved:
            shown = ", ".join(moved[:6]) + (f" and {len(moved) - 6} more" if len(moved) > 6 else "")
            return _tampered(report, "rejected_baseline_tampered",
                             f"the baseline tree ({baseline_tree}) changed while the judged processes ran: "
                             f"{shown}")  # fmt: skip
    return report


def _tampered(report: JudgeReport, status: Any, why: str) -> JudgeReport:
    evidence = (
        f"{why}; an honest version changes only its own files and leaves the task's and the baseline's alone"
    )
    return report.model_copy(
        update={
            "status": "rejected",
            "rejection": Rejection(check="baseline", status=status, evidence=evidence),
        }
    )


def samples(report: JudgeReport, side: str) -> list[float]:
    got = report.timing.get(side)
    return list(got.per_call_us) if got else []


def failure_fields(report: JudgeReport) -> dict[str, Any]:
    """Record fields of a report that is not a pass: a rejection, correctness_failed, failed or timeout."""
    if report.status == "rejected" and report.rejection is not None:
        rej = report.rejection
        return {"status": rej.status, "rejection": rej, "output_tail": rej.evidence}
    status = {"correctness_failed": "correctness_failed", "timeout": "failed"}.get(report.status, "failed")
    head = "timeout: " if report.status == "timeout" else ""
    return {"status": status, "output_tail": f"{head}{report.error}"[-OUTPUT_TAIL_CHARS:]}


def message_of(report: JudgeReport) -> str:
    if report.status == "rejected" and report.rejection is not None:
        return f"rejected by the guard ({report.rejection.status}): never a win"
    if report.status == "timeout":
        return "the judged run timed out: " + report.error.splitlines()[0] if report.error else "timeout"
    first = report.error.splitlines()[0] if report.error else report.status
    return f"the isolated judge could not pass the candidate: {first}"


def summary_of(report: JudgeReport) -> dict[str, Any]:
    """What the record keeps of the judge's report: batches, sandbox notes, where its time went."""
    return {
        "status": report.status,
        "calls_per_batch": {k: v.calls_per_batch for k, v in report.timing.items()},
        "checked_timed_calls": {k: v.checked_calls for k, v in report.timing.items()},
        "runner_us_median": {k: _median(v.runner_us) for k, v in report.timing.items() if v.runner_us},
        "notes": report.notes,
        "phases_s": report.phases_s,
    }


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]
