"""The guard's steps of `kernelpilot eval` for a contract task (docs/eval-design.md, the pipeline).

A candidate paired against its baseline commit: `run_checked`, one fresh process (`guard.checked`) that
runs the semantic checks and then, when they pass, the paired timing (`kernelpilot compare`'s
`time_compare` of `kernelpilot.guard.timed:make` over the baseline tree and the candidate's); eval reads
the checks' report and judges the candidate side here (`judge_paired`: observation, then physics on the
paired median). The baseline refresh, and a candidate whose baseline commit cannot be checked out, take
`run_harness` (the checks in their own process) and then `measure_guarded`: `kernelpilot time
kernelpilot.guard.timed:make --observe` processes, every run judged here (unpaired).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kernelpilot.foundation.errors import FormatError, ToolchainError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.guard.models import (
    Contract,
    HarnessReport,
    Observation,
    PhysicsCheck,
    Rejection,
    Tolerance,
)
from kernelpilot.guard.timed import TASK_ENV
from kernelpilot.host import toolchain
from kernelpilot.timing.commands import OUTPUT_TAIL_CHARS, run_command

if TYPE_CHECKING:
    from kernelpilot.timing.models import CompareRequest, CompareResult


@dataclass
class HarnessOutcome:
    report: HarnessReport | None
    failure: str = ""  # the harness could not judge (contract error, crash): correctness_failed


def run_harness(contract: Contract, workdir: Path, env: dict[str, str], timeout_s: float) -> HarnessOutcome:
    """The semantic checks in a fresh Python process (the candidate's imports die with it)."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="kernelpilot-contract-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(contract.model_dump_json())
        argv = [sys.executable, "-m", "kernelpilot.guard.harness", path, str(workdir)]
        try:
            out = run_command(argv, cwd=workdir, env=env, timeout_s=timeout_s, field="guard harness")
        except ToolchainError as exc:
            tail = getattr(exc, "stderr_tail", "") or ""
            return HarnessOutcome(None, f"{exc.message}\n{_error_of(tail)}"[-OUTPUT_TAIL_CHARS:])
    finally:
        os.unlink(path)
    try:
        return HarnessOutcome(HarnessReport.model_validate_json(out.stdout))
    except ValueError:
        return HarnessOutcome(None, f"the guard harness printed no report:\n{out.output_tail}")


@dataclass
class CheckedRun:
    """What a `guard.checked` process left: the checks' outcome and, when they passed, its output (the
    paired timing's, read by `tasks.paired.compare_outcome`) or why it was killed."""

    harness: HarnessOutcome
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""
    killed: str = ""  # the process ran past its timeout after the checks passed
    result: str | None = None  # the paired timing's result file (None: it wrote none)


def run_checked(
    contract: Contract, workdir: Path, request: CompareRequest, env: dict[str, str], timeout_s: float
) -> CheckedRun:
    """The semantic checks, then the paired timing of `request`, in one fresh process (`guard.checked`)."""
    with tempfile.TemporaryDirectory(prefix="kernelpilot-checked-") as tmp:
        paths = [Path(tmp) / name for name in ("contract.json", "report.json", "request.json", "result.json")]
        paths[0].write_text(contract.model_dump_json(), encoding="utf-8")
        paths[2].write_text(request.model_dump_json(), encoding="utf-8")
        argv = [sys.executable, "-m", "kernelpilot.guard.checked", str(paths[0]), str(workdir),
                str(paths[1]), str(paths[2]), str(paths[3])]  # fmt: skip
        try:
            res = toolchain.run(argv, cwd=workdir, env=env, timeout_s=timeout_s, check=False)
        except ToolchainError as exc:  # killed at the timeout (during the checks, or the timing after them)
            got = _report_of(paths[1], exc.message)
            return CheckedRun(got, killed=exc.message if got.report is not None else "")
        what = f"the guard's checks (python -m kernelpilot.guard.checked) exited with code {res.returncode}"
        got = _report_of(paths[1], f"{what}\n{res.stderr[-OUTPUT_TAIL_CHARS:]}")
        result = paths[3].read_text(encoding="utf-8") if paths[3].is_file() else None
    return CheckedRun(got, res.returncode, res.stdout, res.stderr, result=result)


def _report_of(path: Path, died: str) -> HarnessOutcome:
    """The checks' outcome from the report file; `died` (the process's end) when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        text = ""
    if not text:
        return HarnessOutcome(None, died[-OUTPUT_TAIL_CHARS:])
    try:
        return HarnessOutcome(HarnessReport.model_validate_json(text))
    except ValueError:
        what = "the guard's checks failed in the timing process"
        return HarnessOutcome(None, f"{what}\n{_error_of(text)}"[-OUTPUT_TAIL_CHARS:])


def _error_of(tail: str) -> str:
    """A typed error the harness printed as JSON, as its message and hint; else the raw tail."""
    for line in reversed(tail.splitlines()):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            e = doc["error"]
            return f"{e.get('type', 'error')}: {e.get('message', '')} (fix: {e.get('hint', '')})"
    return tail


# Every timing process of a contract task is watched (timers, threads) and its timed outputs checked; the
# activity trace is taken in the first measured one only: the profiler's start-up cost 5.6 s inside one
# timing process on an H100 (tests/guard/gpu_suite.py, 2026-11-23; a whole process there takes ~7 s).
TRACE_EVERY_RUN = False


@dataclass
class GuardedTiming:
    samples: list[float] = field(default_factory=list)
    tail: str = ""
    observation: Observation | None = None
    rejection: Rejection | None = None
    gpu: str | None = None


def _result_of(stdout: str, run: int) -> dict[str, Any]:
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"timing run {run}: its output is not one JSON result (the candidate printed to stdout?)",
            "a candidate must not print: the whole stdout of the timing process is its result",
        ) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("stats"), dict):
        raise FormatError(f"timing run {run}: the output is not a `kernelpilot time` result", "report a bug")
    return doc


def measure_guarded(
    argv: list[str],
    task_json: Path,
    workdir: Path,
    env: dict[str, str],
    *,
    runs: int,
    warmup: int,
    timeout_s: float,
    refs: list[list[float]] | None = None,
    tol: Tolerance | None = None,
    progress: Progress = no_progress,
) -> GuardedTiming:
    """warmup + runs timing processes; every run's observation is judged here, the first finding wins."""
    env = {**env, TASK_ENV: str(task_json)}
    got = GuardedTiming()
    total = warmup + runs
    for i in range(total):
        run_argv = argv if TRACE_EVERY_RUN or i == warmup else [*argv, "--no-observe-trace"]
        try:
            out = run_command(run_argv, cwd=workdir, env=env, timeout_s=timeout_s, field="eval_command")
        except ToolchainError as exc:
            got.rejection = findings_rejection(getattr(exc, "stderr_tail", "") or "")
            if got.rejection is None:
                raise
            return got
        doc = _result_of(out.stdout, i + 1)
        median = float(doc["stats"]["median"])
        got.tail = out.output_tail
        got.gpu = (doc.get("environment") or {}).get("torch_device") or None
        if doc.get("observation") is not None:
            from kernelpilot.guard.observe import judged

            try:
                obs = Observation.model_validate(doc["observation"])
            except ValidationError as exc:
                raise FormatError(
                    f"timing run {i + 1}: its observation is not valid: {exc.errors()[0]['msg']}",
                    "report a bug (the timing process printed something eval cannot read)",
                ) from exc
            if obs.observed or got.observation is None:  # the record keeps the traced run's observation
                got.observation = obs
            rej = judged(obs, median, refs, tol)
            if rej is not None:
                got.rejection = rej
                got.samples.append(median)
                return got
        if i >= warmup:
            got.samples.append(median)
        progress(i + 1, total, f"run {i + 1}/{total}")
    return got


def findings_rejection(tail: str) -> Rejection | None:
    """The rejection a failed timing process names in its output: its `guard_findings` error (a replaced
    timer or a started thread the Watch saw) or a `timer_mismatch` (the event timer stopped measuring)."""
    from kernelpilot.guard.errors import GuardFindingsError
    from kernelpilot.timing.errors import TimerMismatchError

    start = tail.find(GuardFindingsError.PREFIX)
    if start >= 0:
        text = tail[start + len(GuardFindingsError.PREFIX) :].split('"', 1)[0].split("\n", 1)[0]
        text = text.split(" (fix: ", 1)[0]  # tasks.paired._cli_error appends the hint
        replaced = "replaced:" in text
        return Rejection(
            check="observation",
            status="rejected_timer_replaced" if replaced else "rejected_thread",
            evidence=f"the timing process failed and the guard had seen: {text}",
        )
    start = tail.find(TimerMismatchError.__name__)
    if start >= 0:
        text = tail[start:].split('"', 1)[0].split("\n", 1)[0].split(" (fix: ", 1)[0]
        return Rejection(
            check="observation",
            status="rejected_timer_replaced",
            evidence=f"the timing process stopped: {text}",
        )
    return None


@dataclass
class PairedJudgement:
    """The guard's verdict on the candidate side of a paired run (`judge_paired`)."""

    observation: Observation | None
    rejection: Rejection | None
    physics: PhysicsCheck | None


def judge_paired(cmp: CompareResult, contract: Contract, report: HarnessReport | None) -> PairedJudgement:
    """The candidate side of `kernelpilot compare` (its own process) judged here: the Watch's findings, its
    all-stream work and its timed outputs against its paired median, then physics on that median and the
    GPU the timing process named. The baseline side passed the same guard when it was a candidate."""
    from kernelpilot.guard.observe import judged

    raw = (cmp.observations or {}).get(cmp.label_b)
    if raw is None:
        raise FormatError(
            "the paired timing returned no observation of the candidate: the guard saw nothing",
            "run eval with kernelpilot's guard installed (`kernelpilot compare --observe`)",
        )
    try:
        obs = Observation.model_validate(raw)
    except ValidationError as exc:
        raise FormatError(
            f"the paired timing's observation of the candidate is not valid: {exc.errors()[0]['msg']}",
            "report a bug (the timing process printed something eval cannot read)",
        ) from exc
    median = cmp.b_stats.median
    rej = judged(obs, median, report.timed_refs if report else None, report.tolerance if report else None)
    if rej is not None:
        return PairedJudgement(obs, rej, None)
    physics = physics_step(contract, median, cmp.environment.get("torch_device") or None)
    return PairedJudgement(obs, physics.rejection, physics)


def physics_step(contract: Contract, median_us: float, gpu: str | None) -> PhysicsCheck:
    from kernelpilot.guard.physics import check

    return check(contract, median_us, gpu)
