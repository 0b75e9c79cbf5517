"""`evaluate`: baseline refresh and candidate evaluation of a task, with the verdict and the ledger.

Candidate order: baseline present and current (else needs_baseline) -> changed files within the
allowed list (else out_of_scope, nothing run) -> correctness: the correctness commands (else
correctness_failed) -> timing against the baseline
commit, paired (`tasks.paired`: the commit as a detached worktree in `<task>/.baseline-tree/`, both sides
timed now, interleaved A,B,B,A; verdict from the median per-pair ratio and its bootstrap CI -> improved /
regressed / neutral, unstable only when the ratio is) or, when the baseline cannot run now, unpaired
against baseline.json's samples (stability of both sides, then the bootstrap CI of the ratio of
medians), the record saying which and why. A CPU contract task is judged by the isolated judge instead
(`tasks.judged`, `kernelpilot.judge`: checks and paired batches in processes the candidate cannot reach);
its report comes first, then the correctness commands, then physics on the candidate's median. A GPU
contract keeps the in-process guard (`guard.checked`: checks and paired timing in one process, judged
here) until the judge's GPU arena has its device record.
Everything is computed first; result.json is then written atomically and one
ledger line appended, so a crash mid-eval leaves neither.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelpilot.foundation.atomic import write_temp
from kernelpilot.foundation.errors import InputFileError, KernelpilotError, StateError, ToolchainError
from kernelpilot.foundation.models import compact_json
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.foundation.text import plain_errors
from kernelpilot.guard.models import Contract, HarnessReport, Rejection
from kernelpilot.tasks import paired
from kernelpilot.tasks.create import command_env, interpreter_argv, now_iso
from kernelpilot.tasks.errors import CorrectnessFailedError
from kernelpilot.tasks.models import (
    LEDGER_VERSION,
    Baseline,
    EvalRecord,
    EvaluateRequest,
    EvaluateResult,
    Task,
)
from kernelpilot.tasks.store import append_jsonl, atomic_write_json, read_json, read_task
from kernelpilot.timing import environment, instrumentation
from kernelpilot.timing.commands import OUTPUT_TAIL_CHARS, run_command
from kernelpilot.timing.core import measure_command
from kernelpilot.timing.models import ClockEvidence
from kernelpilot.timing.stats import bootstrap_speedup_ci, speedup_of, summarize

if TYPE_CHECKING:
    from kernelpilot.guard.steps import HarnessOutcome


def load_task(path_arg: str) -> tuple[Task, Path, Path]:
    """(task, task folder, repository root) from a task folder or task.json path."""
    p = Path(path_arg).expanduser()
    task_json = p / "task.json" if p.is_dir() else p
    if not task_json.is_file():
        raise InputFileError(f"task {path_arg!r}: no task.json found", "run `kernelpilot task create` first")
    task = read_task(task_json)
    task_dir = task_json.parent.resolve()
    try:  # a hand-edited workdir can be no path the OS can hold (ENAMETOOLONG, ELOOP, a NUL byte)
        workdir = (task_dir / task.workdir).resolve()
        present = workdir.is_dir()
    except (OSError, ValueError) as exc:
        raise InputFileError(
            f"task workdir {task.workdir[:120]!r} (from task.json) is not a usable path: "
            f"{exc.__class__.__name__}",
            "set workdir to the repository root, relative to the task folder, or recreate the task",
        ) from exc
    if not present:
        raise InputFileError(f"task workdir {workdir} (from task.json) does not exist", "recreate the task")
    return task, task_dir, workdir


def task_hash(task: Task) -> str:
    """Hash of what defines the measurement; a baseline with another hash is stale."""
    keys = {
        "eval_command": task.eval_command,
        "metric": task.metric.model_dump(),
        "correctness_commands": task.correctness_commands,
        **({"timing_mode": task.timing_mode} if task.timing_mode else {}),
        "env": task.environment.model_dump(exclude={"stripped_at_creation"}),
        **({"contract": task.contract.model_dump(mode="json")} if task.contract else {}),
    }
    return hashlib.sha256(compact_json(keys).encode()).hexdigest()[:16]


def _git(workdir: Path, args: list[str]) -> str:
    from kernelpilot.host import toolchain

    exe = toolchain.require_tool("git")
    try:
        res = toolchain.run([str(exe), *args], cwd=workdir, timeout_s=60, check=True)
    except ToolchainError as exc:
        raise StateError(
            f"git {' '.join(args)} failed in {workdir}: {exc}", "is the workdir a git repository?"
        ) from exc
    return res.stdout


def _excluded(workdir: Path, task_dir: Path) -> list[str]:
    """Paths whose changes never count against the allowed files: the task folder itself and, when the
    workdir is a kernelpilot workspace, its bookkeeping (memory/, plans/, profiles/, reports/, README)."""
    out: list[str] = []
    try:
        rel = task_dir.relative_to(workdir)
    except ValueError:
        pass
    else:
        if str(rel) != ".":
            out.append(str(rel))
    from kernelpilot.workspace.core import CONFIG_FILE, SUBDIRS

    if (workdir / CONFIG_FILE).is_file():
        out += [*SUBDIRS, "README.md", CONFIG_FILE]
    # every task's own bookkeeping (result.json, ledger.jsonl, baseline.json of a second task beside this one)
    if (workdir / ".kernelpilot").is_dir():
        out.append(".kernelpilot")
    try:
        listed = _git(workdir, ["ls-files", "--cached", "--others", "--exclude-standard", "--", "*task.json"])
    except StateError:  # not a git tree: there is no scope check to feed (the caller reports it)
        listed = ""
    out += [Path(f).parent.as_posix() for f in listed.splitlines() if _is_task_file(workdir / f)]
    return out


def _is_task_file(path: Path) -> bool:
    """A kernelpilot task.json (not some other file of that name)."""
    if path.name != "task.json" or path.parent == path.parent.parent:
        return False
    try:
        doc = read_json(path, "task file")  # the guarded reader: a nested or huge file is not a task file
    except KernelpilotError:
        return False
    return isinstance(doc, dict) and {"eval_command", "allowed_files", "metric"} <= set(doc)


def changed_files(workdir: Path, base_commit: str, exclude: list[str]) -> list[str]:
    """Files differing from base_commit in the working tree (tracked) plus untracked, minus excludes."""
    specs = ["--", ".", *[f":(exclude){e}" for e in exclude]]
    tracked = _git(workdir, ["diff", "--name-only", "--no-renames", base_commit, *specs]).splitlines()
    untracked = _git(workdir, ["ls-files", "--others", "--exclude-standard", *specs]).splitlines()
    return sorted({f for f in (*tracked, *untracked) if f})


def out_of_scope(files: list[str], allowed: list[str]) -> list[str]:
    return [f for f in files if not any(f == a or fnmatch.fnmatchcase(f, a) for a in allowed)]


def _run_checks(task: Task, workdir: Path, env: dict[str, str]) -> tuple[bool, str]:
    for i, argv in enumerate(task.correctness_commands, 1):
        try:
            run_command(
                interpreter_argv(argv),
                cwd=workdir,
                env=env,
                timeout_s=task.timeout_s,
                field=f"correctness_command[{i}]",
            )
        except ToolchainError as exc:
            tail = getattr(exc, "stderr_tail", "") or ""
            return False, f"{exc.message}\n{tail}"[-OUTPUT_TAIL_CHARS:]
    return True, ""


def _measure(
    task: Task, workdir: Path, env: dict[str, str], runs: int, progress: Progress
) -> tuple[list[float], str]:
    return measure_command(
        interpreter_argv(task.eval_command),
        cwd=workdir,
        env=env,
        runs=runs,
        warmup=task.warmup,
        timeout_s=task.timeout_s,
        regex=task.metric.regex,
        json_key=task.metric.json_key,
        field="eval_command",
        progress=progress,
    )


def _refresh_baseline(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, progress: Progress
) -> EvaluateResult:
    exclude = _excluded(workdir, task_dir)
    commit = _git(workdir, ["rev-parse", "HEAD"]).strip()
    dirty = changed_files(workdir, "HEAD", exclude)
    if dirty and not req.allow_dirty_baseline:
        raise StateError(
            f"the tree has uncommitted changes ({', '.join(dirty[:5])}); a baseline must be a commit",
            "commit or stash them, then refresh the baseline (or pass --allow-dirty-baseline)",
        )
    env = command_env(task.environment)
    ok, tail = _run_checks(task, workdir, env)
    if not ok:
        raise CorrectnessFailedError(
            "a correctness command failed on the baseline; no baseline written",
            "fix the baseline (or the check) first",
            stderr_tail=tail,
        )
    if task.contract is not None and _isolated(task):
        samples = _judged_baseline(req, task, task_dir, workdir, env)
    elif task.contract is not None:  # a GPU contract: the in-process guard until issue 46's record
        samples = _guarded_baseline(req, task, task_dir, workdir, env, progress)
    else:
        samples, _ = _measure(task, workdir, env, req.runs or task.runs, progress)
    stats = summarize(samples, task.cv_threshold)
    baseline = Baseline(
        task=task.name,
        task_hash=task_hash(task),
        commit=commit,
        diff_hash=environment.git_diff_hash(workdir, exclude),
        metric=task.metric.name,
        direction=task.metric.direction,
        samples=samples,
        stats=stats,
        stable=stats.stable,
        created=now_iso(),
        environment={
            **environment.capture(),
            "stripped_env": instrumentation.present(patterns=task.environment.strip),
        },
    )
    baseline.metric_basis = cpu_fallback_basis(task, baseline.environment)
    atomic_write_json(task_dir / "baseline.json", baseline.model_dump(mode="json"))
    msg = (
        ""
        if stats.stable
        else (
            f"WARNING: baseline is {stats.verdict}; evals time the baseline commit again beside each "
            "candidate (paired), but an unpaired fallback would call candidates 'unstable'"
        )
    )
    return EvaluateResult(mode="baseline", baseline=baseline, written=["baseline.json"], message=msg)


def _guarded_baseline(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, env: dict[str, str], progress: Progress
) -> list[float]:
    """A contract task's baseline passes the same guard as a candidate, else no baseline is written."""
    fields: dict[str, Any] = {}
    why, report = _guard_correctness(task, workdir, env, fields)
    if why is None:
        samples, _, why = _guard_timing(req, task, task_dir, workdir, env, fields, progress, report)
        if why is None:
            return samples
    raise CorrectnessFailedError(
        f"the guard did not pass the baseline ({fields.get('status')}: {_evidence(fields, why)}); "
        "no baseline written",
        "fix the baseline candidate (or the contract) first",
        stderr_tail=why,
    )


def _evidence(fields: dict[str, Any], why: str) -> str:
    """The rejection's evidence (which check, the numbers) for a message, else the failure's text."""
    rej = fields.get("rejection")
    text = str(getattr(rej, "evidence", "") or "") or why
    return text if len(text) <= 600 else text[:597] + "..."


def _load_baseline(task: Task, task_dir: Path) -> tuple[Baseline | None, str]:
    path = task_dir / "baseline.json"
    if not path.is_file():
        return None, f"no baseline.json in {task_dir.name}/: run `kernelpilot eval <task> --refresh-baseline`"
    from pydantic import ValidationError

    try:
        base = Baseline.model_validate(read_json(path, "baseline file"))
    except ValidationError as exc:
        raise InputFileError(
            f"{path} is not a valid baseline.json: {plain_errors(exc.errors())}", "refresh it"
        ) from exc
    if base.task_hash != task_hash(task):
        return None, "baseline.json is stale (eval command, metric, checks or env changed): refresh it"
    then, now = _gpu_ids(base.environment.get("gpus", [])), _gpu_ids(environment.query_gpus())
    if then != now:
        return None, (
            f"baseline.json was measured on {then or 'no GPU'} but this machine has {now or 'no GPU'}: "
            "refresh the baseline here"
        )
    return base, ""


def _gpu_ids(gpus: Any) -> list[tuple[str, str]]:
    if not isinstance(gpus, list):
        return []
    return [(str(g.get("name")), str(g.get("driver_version"))) for g in gpus if isinstance(g, dict)]


def _candidate(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, progress: Progress
) -> EvaluateResult:
    exclude = _excluded(workdir, task_dir)
    base, why = _load_baseline(task, task_dir)
    commit = environment.git_commit(workdir)
    diff_hash = environment.git_diff_hash(workdir, exclude)
    fields: dict[str, Any] = {
        "task": task.name,
        "metric": task.metric.name,
        "direction": task.metric.direction,
        "speedup": None,
        "speedup_ci": None,
        "baseline_median": base.stats.median if base else None,
        "candidate_median": None,
        "samples": [],
        "baseline_samples": base.samples if base else [],
        "commit": commit,
        "diff_hash": diff_hash,
        "changed_files": [],
        "output_tail": "",
        "environment": {},
    }
    message = ""
    if base is None:
        fields.update(status="needs_baseline", output_tail=why)
        message = why
    else:
        files = changed_files(workdir, base.commit, exclude)
        fields["changed_files"] = files
        bad = out_of_scope(files, task.allowed_files)
        env = command_env(task.environment)
        if bad:
            allowed = ", ".join(task.allowed_files)
            message = f"edited outside the allowed files: {', '.join(bad)} (allowed: {allowed})"
            fields.update(status="out_of_scope", output_tail=message)
        else:
            message = _run_candidate(req, task, task_dir, workdir, base, env, fields, progress)
    fields["environment"] = {
        **environment.capture(),
        "stripped_env": instrumentation.present(patterns=task.environment.strip),
    }
    fields["metric_basis"] = basis = cpu_fallback_basis(task, fields["environment"])
    clocks = fields.get("clocks")
    if basis and isinstance(clocks, ClockEvidence) and clocks.source == "none":
        fields["clocks"] = clocks.model_copy(update={"note": "none: no GPU to read clocks from (CPU timer)"})
    record = EvalRecord(
        created=now_iso(), timing_mode=task.timing_mode, guarded=task.contract is not None, **fields
    )
    _commit_record(task_dir, record)
    recorded = _record_in_db(req, task, task_dir) if req.record_db else []
    return EvaluateResult(
        mode="candidate",
        record=record,
        written=["result.json", "ledger.jsonl"],
        message=message,
        recorded_ids=recorded,
    )


def _run_candidate(
    req: EvaluateRequest,
    task: Task,
    task_dir: Path,
    workdir: Path,
    base: Baseline,
    env: dict[str, str],
    fields: dict[str, Any],
    progress: Progress,
) -> str:
    """correctness -> timing -> observation -> physics -> verdict; fills `fields`, returns the message."""
    if task.contract is not None and _isolated(task):  # the isolated judge (tasks.judged), then the commands
        return _judged_candidate(req, task, task_dir, workdir, env, base, fields)
    report = None
    root, why = (None, "") if task.contract is None else _baseline_root(workdir, task_dir, base)
    if root is not None:  # a GPU contract's checks and its paired timing in one process (guard.checked)
        return _guarded_paired(task, workdir, env, root, task_dir, fields)
    if task.contract is not None:
        rejected, report = _guard_correctness(task, workdir, env, fields)
        if rejected is not None:
            return rejected
    ok, tail = _run_checks(task, workdir, env)
    if not ok:
        fields.update(status="correctness_failed", output_tail=tail)
        return "a correctness command failed; nothing timed"
    if task.contract is None:  # paired timing and its verdict (tasks.paired)
        timed = _time_candidate(req, task, task_dir, workdir, env, base, progress)
    else:  # a GPU contract without a baseline tree: guarded timing processes against baseline.json
        timed = _guarded_unpaired(req, task, task_dir, workdir, env, base, progress, report, why)
    return _timed_into(fields, timed)


def cpu_fallback_basis(task: Task, env: dict[str, Any]) -> str:
    """`EvalRecord.metric_basis` of a time_spec task: `kernelpilot time` times the CPU where torch has no GPU
    (no GPU listed, or a CPU-only torch), and the numbers then are host wall time under a GPU metric's name
    (issue 42: `cold_time_us` with an NVML note on a machine with no GPU). Empty for command metrics."""
    if task.timing_mode is None:
        return ""
    torch_version = str((env.get("versions") or {}).get("torch") or "")
    if env.get("gpus") and not torch_version.endswith("+cpu"):
        return ""
    why = "no GPU on this machine" if not env.get("gpus") else f"torch {torch_version} has no GPU support"
    return (
        f"CPU wall time, not GPU time: {why}, so it was timed on the CPU (`kernelpilot time`'s CPU fallback, "
        "or the isolated judge on the CPU: perf_counter around each call; no L2 flush, no clocks)"
    )


def _isolated(task: Task) -> bool:
    """A contract the isolated judge runs: on the CPU (declared, or `auto` on a machine without a GPU). A GPU
    contract keeps the in-process guard (`guard.checked`) until the judge's GPU arena has its device record
    (docs/guard.md, "The isolated judge": what is not isolated yet)."""
    assert task.contract is not None
    if task.contract.device != "auto":
        return task.contract.device == "cpu"
    return not environment.query_gpus()


def _timed_into(fields: dict[str, Any], timed: paired.Timed) -> str:
    """The timing step's fields into the record's; its message, also at the head of the output tail."""
    fields.update(timed.fields)
    evidence_only = "rejection" in timed.fields  # a rejection's output tail is its evidence alone
    if timed.message and not evidence_only and timed.message not in fields["output_tail"]:
        fields["output_tail"] = f"{timed.message}\n{fields['output_tail']}"[-OUTPUT_TAIL_CHARS:]
    return timed.message


def _flagged(message: str, fields: dict[str, Any]) -> str:
    """The verdict's message, with the physics flag (beyond 95 % of the attainable roof) when raised."""
    physics = fields.get("physics")
    if physics is None or not physics.flagged:
        return message
    flag = f"FLAGGED for review: beyond 95% of the attainable roof ({physics.arithmetic})"
    return f"{message}; {flag}" if message else flag


def _reject(fields: dict[str, Any], rejection: Rejection) -> str:
    fields.update(status=rejection.status, rejection=rejection, output_tail=rejection.evidence)
    return f"rejected by the guard ({rejection.status}): never a win"


def _judged_baseline(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, env: dict[str, str]
) -> list[float]:
    """A contract task's baseline passes the isolated judge like a candidate, else no baseline is written."""
    from kernelpilot.tasks import judged

    jreq = judged.request(task, workdir, env, [("baseline", workdir)], workdir, req.runs or task.runs)
    report = judged.run(jreq, task, task_dir, None)
    if report.status == "passed":
        return judged.samples(report, "baseline")
    fields = judged.failure_fields(report)
    raise CorrectnessFailedError(
        f"the guard did not pass the baseline ({fields['status']}: {_evidence(fields, report.error)}); "
        "no baseline written",
        "fix the baseline candidate (or the contract) first",
        stderr_tail=report.error,
    )


def _judged_candidate(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, env: dict[str, str], base: Baseline,
    fields: dict[str, Any],
) -> str:  # fmt: skip
    """The isolated judge (tasks.judged): paired against the baseline commit's tree when it can be checked
    out, else the candidate alone against baseline.json; then the task's correctness commands; then physics
    on the candidate's median."""
    from kernelpilot.tasks import judged

    root, why = _baseline_root(workdir, task_dir, base)
    sides = [("candidate", workdir)] if root is None else [("baseline", root), ("candidate", workdir)]
    jreq = judged.request(task, workdir, env, sides, root or workdir, req.runs or task.runs)
    report = judged.run(jreq, task, task_dir, None if root is None else task_dir / paired.BASELINE_TREE)
    fields["judge"] = judged.summary_of(report)
    if report.calls:
        fields["correctness"] = report.summary()
    if report.status != "passed":
        fields.update(judged.failure_fields(report))
        return judged.message_of(report)
    ok, tail = _run_checks(task, workdir, env)  # after the judge: its verdict comes first
    if not ok:
        fields.update(status="correctness_failed", output_tail=tail)
        return "a correctness command failed; its timing is discarded"
    if root is None:
        return _timed_into(fields, _judged_unpaired(task, base, judged.samples(report, "candidate"), why))
    return _timed_into(fields, _judged_paired(task, report))


def _judged_paired(task: Task, report: Any) -> paired.Timed:
    """The verdict of the judge's paired batches: median per-pair speed-up and its bootstrap interval."""
    from kernelpilot.tasks import judged
    from kernelpilot.timing.stats import paired_ratio_ci

    assert task.contract is not None
    cand, base = judged.samples(report, "candidate"), judged.samples(report, "baseline")
    sp, lo, hi = paired_ratio_ci(report.ratios)
    status = _status_of(task, sp, lo, hi)
    cmed = sorted(cand)[len(cand) // 2]
    fields: dict[str, Any] = {
        "status": status, "method": "paired", "speedup": sp, "speedup_ci": [lo, hi], "samples": cand,
        "baseline_samples": base, "candidate_median": cmed, "baseline_median": sorted(base)[len(base) // 2],
        "ratio_median": 1.0 / sp, "ratio_ci": [1.0 / hi, 1.0 / lo], "pairs": len(report.ratios),
        "output_tail": "",
    }  # fmt: skip
    return _physics_into(task, fields, cmed, report.device)


def _judged_unpaired(task: Task, base: Baseline, samples: list[float], why: str) -> paired.Timed:
    note = f"unpaired (candidate now vs baseline.json samples): {why}"
    fields = _verdict(task, base, samples)
    message = fields.pop("_message")
    fields.update(method="unpaired", output_tail=f"{message}; {note}" if message else note)
    timed = _physics_into(task, fields, fields["candidate_median"], "cpu")
    timed.message = f"{timed.message}; {note}" if timed.message else note
    return timed


def _physics_into(task: Task, fields: dict[str, Any], median: float, device: str) -> paired.Timed:
    """Physics on the candidate's median (a GPU the wiki knows), then the verdict's message."""
    from kernelpilot.guard.steps import physics_step

    assert task.contract is not None
    if device != "cpu":
        physics = physics_step(task.contract, median, device)
        fields["physics"] = physics
        if physics.rejection is not None:
            rej = physics.rejection
            fields.update(status=rej.status, rejection=rej, output_tail=rej.evidence)
            return paired.Timed(fields, f"rejected by the guard ({rej.status}): never a win")
    return paired.Timed(fields, _flagged(fields.pop("_message", "") or "", fields))


# The harness process has just run the candidate on the GPU (imports, JIT and disk caches, clocks), which
# is what an untimed warm-up run is for: it counts as the first of a contract task's warm-up runs.
HARNESS_WARMUP_RUNS = 1


def _guard_correctness(
    task: Task, workdir: Path, env: dict[str, str], fields: dict[str, Any]
) -> tuple[str | None, HarnessReport | None]:
    """The contract harness in its own process: (a message when the candidate is rejected or failed, the
    harness report when it passed)."""
    from kernelpilot.guard.steps import run_harness

    assert task.contract is not None
    return _harness_verdict(run_harness(task.contract, workdir, env, task.timeout_s), fields)


def _harness_verdict(got: HarnessOutcome, fields: dict[str, Any]) -> tuple[str | None, HarnessReport | None]:
    """The checks' outcome into the record: (a message when the candidate is rejected or failed, the
    report when it passed); the same whether they ran in the harness's process or in `guard.checked`."""
    if got.report is None or got.report.error:
        why = got.failure or (got.report.error if got.report else "")
        fields.update(status="correctness_failed", output_tail=why[-OUTPUT_TAIL_CHARS:])
        return (
            "the guard harness could not pass the candidate: " + why.splitlines()[0] if why else "failed"
        ), None
    fields["correctness"] = got.report.summary()
    if got.report.rejection is not None:
        return _reject(fields, got.report.rejection), None
    return None, got.report


def _guard_timing(
    req: EvaluateRequest,
    task: Task,
    task_dir: Path,
    workdir: Path,
    env: dict[str, str],
    fields: dict[str, Any],
    progress: Progress,
    report: HarnessReport | None,
) -> tuple[list[float], str, str | None]:
    """Observed timing runs and the physics check: (samples, output tail, rejection message or None)."""
    from kernelpilot.guard.steps import measure_guarded, physics_step

    assert task.contract is not None
    got = measure_guarded(
        interpreter_argv(task.eval_command),
        task_dir / "task.json",
        workdir,
        env,
        runs=req.runs or task.runs,
        warmup=max(0, task.warmup - HARNESS_WARMUP_RUNS),
        timeout_s=task.timeout_s,
        refs=report.timed_refs if report else None,
        tol=report.tolerance if report else None,
        progress=progress,
    )
    fields["observation"] = got.observation
    if got.rejection is not None:
        fields["candidate_median"] = got.samples[-1] if got.samples else None
        return got.samples, got.tail, _reject(fields, got.rejection)
    median = sorted(got.samples)[len(got.samples) // 2]
    physics = physics_step(task.contract, median, got.gpu)
    fields["physics"] = physics
    if physics.rejection is not None:
        fields.update(samples=got.samples, candidate_median=median)
        return got.samples, got.tail, _reject(fields, physics.rejection)
    return got.samples, got.tail, None


def _record_in_db(req: EvaluateRequest, task: Task, task_dir: Path) -> list[str]:
    """Ingest the result.json just written into the experiment database (after it is safely on disk)."""
    from kernelpilot.experiments.api import ExpIngestRequest
    from kernelpilot.experiments.ops import ingest

    out = ingest(
        ExpIngestRequest(
            db=None if req.record_db == "default" else req.record_db,
            path=str(task_dir / "result.json"),
            operator=task.op or None,
            dtype=",".join(task.dtypes),
            change=req.change,
            parent_id=req.parent_id,
            workspace=str(task_dir),
        )
    )
    return [r.id for r in out.records]


CLEAN_DIFF_HASH = hashlib.sha256(b"").hexdigest()  # environment.git_diff_hash of a clean tree


def _baseline_root(workdir: Path, task_dir: Path, base: Baseline) -> tuple[Path | None, str]:
    """The baseline commit checked out beside the task (tasks.paired), or None and why it cannot be."""
    if base.diff_hash not in (None, CLEAN_DIFF_HASH):
        return None, "the baseline was measured on a tree with uncommitted changes: no commit holds its code"
    try:
        return paired.baseline_tree(workdir, task_dir, base.commit), ""
    except StateError as exc:
        return None, f"no baseline tree: {exc.message}"


def _time_candidate(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, env: dict[str, str], base: Baseline,
    progress: Progress,
) -> paired.Timed:  # fmt: skip
    """Paired against the baseline commit (tasks.paired) when it can be; else unpaired, saying why."""
    root, why = _baseline_root(workdir, task_dir, base)
    if root is None:
        return _unpaired(req, task, workdir, env, base, progress, why)
    spec = paired.time_spec_of(task)
    if spec is not None:
        return paired.paired_spec(task, spec, root, workdir, env)
    try:
        return paired.paired_command(task, root, workdir, env, req.runs or task.runs, progress)
    except paired.BaselineUnrunnable as exc:
        return _unpaired(req, task, workdir, env, base, progress, exc.message)
    except (ToolchainError, KernelpilotError) as exc:
        t = getattr(exc, "stderr_tail", "") or ""
        tail = f"{exc.message}\n{t}"[-OUTPUT_TAIL_CHARS:]
        return paired.Timed({"status": "failed", "method": "paired", "output_tail": tail}, exc.message)


# `guard.checked` runs what the harness process and the compare process each ran under the task's timeout.
CHECKED_TIMEOUT_FACTOR = 2


def _guarded_paired(
    task: Task, workdir: Path, env: dict[str, str], root: Path, task_dir: Path, fields: dict[str, Any]
) -> str:
    """A contract task's candidate: the guard's checks, then the paired timing against the baseline
    commit's (`kernelpilot.guard.timed:make` under both roots), in one `guard.checked` process; its report
    is judged first, as the harness's own process's was, then the correctness commands, then the timing
    (`_judge_guarded`). Its timeout covers what the two processes it replaces each had."""
    from kernelpilot.guard.steps import run_checked
    from kernelpilot.guard.timed import TASK_ENV, TIMED_SETS
    from kernelpilot.tasks.create import GUARD_SPEC

    assert task.contract is not None
    genv = {**env, TASK_ENV: str(task_dir / "task.json")}
    request = paired.compare_request(task, GUARD_SPEC, root, workdir, TIMED_SETS, observe=True)
    got = run_checked(task.contract, workdir, request, genv, CHECKED_TIMEOUT_FACTOR * task.timeout_s)
    rejected, report = _harness_verdict(got.harness, fields)
    if rejected is not None:
        return rejected
    ok, tail = _run_checks(task, workdir, env)  # after the process: the checks' verdict comes first
    if not ok:
        fields.update(status="correctness_failed", output_tail=tail)
        return "a correctness command failed; its timing is discarded"
    if got.killed:  # the timing process ran past the task's timeout and was killed
        timed = _failed_paired(got.killed)
    else:
        timed = paired.compare_outcome(got.returncode, got.stdout, got.stderr, got.result)
    return _timed_into(fields, _judge_guarded(timed, task.contract, report))


def _judge_guarded(timed: paired.Timed, contract: Contract, report: HarnessReport | None) -> paired.Timed:
    """The candidate side of the paired timing judged by the guard (guard.steps.judge_paired)."""
    from kernelpilot.guard.steps import findings_rejection, judge_paired

    if timed.compare is None:  # the timing process failed: a replaced timer or a thread it saw rejects
        rej = findings_rejection(str(timed.fields.get("output_tail", "")))
        return _guard_rejected(rej, {"method": "paired"}) if rej is not None else timed
    try:
        got = judge_paired(timed.compare, contract, report)
    except KernelpilotError as exc:
        return _failed_paired(exc.message)
    fields = {**timed.fields, "observation": got.observation, "physics": got.physics}
    if got.rejection is not None:
        kept = {k: fields[k] for k in ("method", "observation", "physics", "samples", "baseline_samples",
                                       "baseline_median", "candidate_median", "clocks")}  # fmt: skip
        return _guard_rejected(got.rejection, kept)
    return paired.Timed(fields, _flagged(timed.message, fields), timed.compare)


def _failed_paired(why: str) -> paired.Timed:
    return paired.Timed({"status": "failed", "method": "paired", "output_tail": why}, why)


def _guard_rejected(rejection: Rejection, fields: dict[str, Any]) -> paired.Timed:
    """A rejection as the timing step's outcome: no speed-up, the evidence as the output tail."""
    f = {**fields, "status": rejection.status, "rejection": rejection, "output_tail": rejection.evidence}
    return paired.Timed(f, f"rejected by the guard ({rejection.status}): never a win")


def _guarded_unpaired(
    req: EvaluateRequest, task: Task, task_dir: Path, workdir: Path, env: dict[str, str], base: Baseline,
    progress: Progress, report: HarnessReport | None, why: str,
) -> paired.Timed:  # fmt: skip
    """Guarded timing processes now (guard.steps.measure_guarded) against baseline.json's samples."""
    note = f"unpaired (candidate now vs baseline.json samples): {why}"
    fields: dict[str, Any] = {"method": "unpaired", "output_tail": ""}
    try:
        samples, tail, rejected = _guard_timing(req, task, task_dir, workdir, env, fields, progress, report)
    except (ToolchainError, KernelpilotError) as exc:
        t = getattr(exc, "stderr_tail", "") or ""
        tail = f"{exc.message}\n{t}"[-OUTPUT_TAIL_CHARS:]
        return paired.Timed({"status": "failed", "method": "unpaired", "output_tail": tail}, exc.message)
    if rejected is not None:
        return paired.Timed(fields, rejected)
    fields.update(_verdict(task, base, samples))
    message = _flagged(fields.pop("_message"), fields)
    message = f"{message}; {note}" if message else note
    keep = max(0, OUTPUT_TAIL_CHARS - len(message) - 1)  # the message first, whole; the tail's end after it
    fields["output_tail"] = f"{message}\n{tail[-keep:] if keep else ''}"
    return paired.Timed(fields, message)


def _unpaired(
    req: EvaluateRequest, task: Task, workdir: Path, env: dict[str, str], base: Baseline, progress: Progress,
    why: str,
) -> paired.Timed:  # fmt: skip
    """The candidate's runs now against baseline.json's samples (taken when the baseline was refreshed)."""
    note = f"unpaired (candidate now vs baseline.json samples): {why}"
    try:
        samples, tail = _measure(task, workdir, env, req.runs or task.runs, progress)
    except (ToolchainError, KernelpilotError) as exc:
        t = getattr(exc, "stderr_tail", "") or ""
        return paired.Timed(
            {
                "status": "failed",
                "method": "unpaired",
                "output_tail": f"{exc.message}\n{t}"[-OUTPUT_TAIL_CHARS:],
            },
            exc.message,
        )
    fields = _verdict(task, base, samples)
    message = fields.pop("_message")
    message = f"{message}; {note}" if message else note
    fields.update(method="unpaired", output_tail=f"{message}\n{tail}"[-OUTPUT_TAIL_CHARS:])
    return paired.Timed(fields, message)


def _verdict(task: Task, base: Baseline, samples: list[float]) -> dict[str, Any]:
    cand = summarize(samples, task.cv_threshold)
    out: dict[str, Any] = {"samples": samples, "candidate_median": cand.median}
    if not base.stable or not cand.stable:
        side = "baseline" if not base.stable else "candidate"
        which = base.stats if not base.stable else cand
        out.update(
            status="unstable", _message=f"{side} is {which.verdict}: no speed-up claimed; measure again"
        )
        return out
    if base.stats.median <= 0 or cand.median <= 0:
        out.update(status="failed", _message="a median of the metric is <= 0: a speed-up ratio is undefined")
        return out
    sp = speedup_of(base.stats.median, cand.median, task.metric.direction)
    lo, hi = bootstrap_speedup_ci(base.samples, samples, task.metric.direction)
    out.update(status=_status_of(task, sp, lo, hi), speedup=sp, speedup_ci=[lo, hi], _message="")
    return out


def _status_of(task: Task, sp: float, lo: float, hi: float) -> str:
    """improved / regressed only when the interval clears 1 and the speed-up clears the task's min effect."""
    if lo > 1.0 and sp >= 1.0 + task.min_effect:
        return "improved"
    if hi < 1.0 and sp <= 1.0 / (1.0 + task.min_effect):
        return "regressed"
    return "neutral"


def _commit_record(task_dir: Path, record: EvalRecord) -> None:
    """result.json via temp+fsync, ledger line, then rename: a crash before the end leaves neither."""
    data = record.model_dump(mode="json")
    tmp = write_temp(task_dir / "result.json", json.dumps(data, indent=2, sort_keys=True) + "\n")
    try:
        append_jsonl(task_dir / "ledger.jsonl", {**data, "ledger_version": LEDGER_VERSION})
        os.replace(tmp, task_dir / "result.json")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def evaluate(req: EvaluateRequest, progress: Progress = no_progress) -> EvaluateResult:
    task, task_dir, workdir = load_task(req.task)
    if req.refresh_baseline:
        return _refresh_baseline(req, task, task_dir, workdir, progress)
    return _candidate(req, task, task_dir, workdir, progress)
