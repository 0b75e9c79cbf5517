"""The guard's steps of `kernelpilot eval` for a contract task (docs/eval-design.md, the pipeline).

correctness: `harness` in a fresh process; timing: each run is a `kernelpilot time
kernelpilot.guard.timed:make --observe` process whose whole stdout must be its one JSON result;
observation: `observe.judge` of every run, here in the judging process; physics: `physics.check` of
the candidate's median on the GPU the timing process named.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from kernelpilot.timing.commands import OUTPUT_TAIL_CHARS, run_command


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
            from kernelpilot.guard.observe import judge, judge_outputs

            obs = Observation.model_validate(doc["observation"])
            if obs.observed or got.observation is None:  # the record keeps the traced run's observation
                got.observation = obs
            rej = judge(obs, median)
            if rej is None and refs and tol is not None:
                rej = judge_outputs(obs, refs, tol)
            if rej is not None:
                got.rejection = rej
                got.samples.append(median)
                return got
        if i >= warmup:
            got.samples.append(median)
        progress(i + 1, total, f"run {i + 1}/{total}")
    return got


def findings_rejection(tail: str) -> Rejection | None:
    """The rejection a failed timing process names in its `guard_findings` error, if it printed one."""
    from kernelpilot.guard.errors import GuardFindingsError

    start = tail.find(GuardFindingsError.PREFIX)
    if start < 0:
        return None
    text = tail[start + len(GuardFindingsError.PREFIX) :].split('"', 1)[0].split("\n", 1)[0]
    replaced = "replaced:" in text
    return Rejection(
        check="observation",
        status="rejected_timer_replaced" if replaced else "rejected_thread",
        evidence=f"the timing process failed and the guard had seen: {text}",
    )


def physics_step(contract: Contract, median_us: float, gpu: str | None) -> PhysicsCheck:
    from kernelpilot.guard.physics import check

    return check(contract, median_us, gpu)
