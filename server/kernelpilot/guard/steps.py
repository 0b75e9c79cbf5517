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
    """The semantic checks, then the paired timing of `request`, in one fresh process (`guard.checked`);
    then the baseline side checked for tampering (`baseline_tampered`): a candidate that passed is
    rejected when it did."""
    tree = baseline_tree_of(request.root_a)
    before = tree_state(tree) if tree is not None else {}
    got = _run_checked(contract, workdir, request, env, timeout_s)
    report = got.harness.report
    if tree is not None and report is not None and report.rejection is None and not report.error:
        why = baseline_tampered(tree, before, got.result)
        if why:
            report.rejection = Rejection(
                check="baseline",
                status="rejected_baseline_tampered",
                evidence=f"{why}; an honest version changes only its own files and leaves the baseline side "
                "(its tree and the functions it calls) as it found it",
            )
    return got


def _run_checked(
    contract: Contract, workdir: Path, request: CompareRequest, env: dict[str, str], timeout_s: float
) -> CheckedRun:
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


BASELINE_TREE = ".baseline-tree"  # tasks.paired.BASELINE_TREE (the task folder's worktree of the baseline)
# The paired baseline side's median may read this many times baseline.json's (plus its IQR) before the
# baseline is called tampered with; KERNELPILOT_GUARD_BASELINE_SLOWDOWN overrides it in eval's environment
# (a shared GPU: several evals at once slowed the H100 suite's 2.8 ms baseline to 5-23 ms).
BASELINE_SLOWDOWN = 1.5
SLOWDOWN_ABS_US = 2.0  # and this much absolute (a few-us kernel's launch jitter), as `observe.allowed_us`
SLOWDOWN_ENV = "KERNELPILOT_GUARD_BASELINE_SLOWDOWN"


def baseline_tree_of(root: str | None) -> Path | None:
    """The `.baseline-tree` folder `root` (the paired baseline side's root) lies in, if any."""
    if not root:
        return None
    path = Path(root).resolve()
    for p in (path, *path.parents):
        if p.name == BASELINE_TREE:
            return p
    return None


def tree_state(tree: Path) -> dict[str, tuple[int, int, int, int]]:
    """(size, mtime, ctime, inode) of every file of the tree but its `.git` link: a file rewritten and put
    back keeps its bytes and can keep its mtime, never its ctime."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for dirpath, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            full = os.path.join(dirpath, name)
            if name == ".git" and dirpath == str(tree):
                continue
            try:
                st = os.lstat(full)
            except OSError:  # removed while walked: the comparison reports it missing
                continue
            out[os.path.relpath(full, tree)] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    return out


def _pyc_honest(pyc: Path) -> bool:
    """A bytecode cache file holds what its source compiles to (one this interpreter would load)."""
    import importlib.util
    import marshal

    try:
        data = pyc.read_bytes()
    except OSError:
        return True  # gone: nothing this interpreter can load
    if data[:4] != importlib.util.MAGIC_NUMBER:
        return True  # another interpreter's cache: this one never loads it
    parts = pyc.name.split(".")
    src = pyc.parent.parent / f"{parts[0]}.py"
    opt = next((int(p[4:]) for p in parts if p.startswith("opt-") and p[4:].isdigit()), 0)
    try:
        code = compile(src.read_bytes(), str(src), "exec", dont_inherit=True, optimize=opt)
        return bool(marshal.loads(data[16:]) == code)
    except (OSError, SyntaxError, ValueError, EOFError, TypeError):
        return False  # no source, or a cache that is not its source's code


def tree_changes(tree: Path, before: dict[str, tuple[int, int, int, int]]) -> list[str]:
    """Files of the baseline tree changed, added or removed since `before` (bytecode caches: any whose
    code is not its source's, new or old)."""
    after = tree_state(tree)
    changed = []
    for rel in sorted(set(before) | set(after)):
        if "__pycache__" in Path(rel).parts:
            if rel in after and not _pyc_honest(tree / rel):
                changed.append(f"{rel} (bytecode that is not its source's)")
        elif rel not in after:
            changed.append(f"{rel} (removed)")
        elif rel not in before:
            changed.append(f"{rel} (added)")
        elif after[rel] != before[rel]:
            changed.append(f"{rel} (rewritten)")
    return changed


def baseline_tampered(tree: Path, before: dict[str, tuple[int, int, int, int]], result: str | None) -> str:
    """Why the baseline side was tampered with during the checked process ("" when it was not): its tree
    changed on disk, or its paired median read far above baseline.json's."""
    changed = tree_changes(tree, before)
    if changed:
        shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
        return f"the baseline tree ({tree}) changed while the candidate's process ran: {shown}"
    return _baseline_slowed(tree.parent / "baseline.json", result)


def _baseline_slowed(path: Path, result: str | None) -> str:
    """The paired baseline side's median against baseline.json's ("" when within the allowance)."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))["stats"]
        doc = json.loads(result or "")
        got = doc["a_stats"]["median"]
        med, iqr, now = float(rec["median"]), float(rec.get("iqr") or 0.0), float(got)
        if doc.get("verdict_mode") == "cpu":
            return ""  # the host timer on a shared CPU: its noise is no evidence (the tree check still holds)
    except (OSError, ValueError, KeyError, TypeError):
        return ""  # no record to hold it against (the timing's own failure is judged elsewhere)
    try:
        slowdown = float(os.environ.get(SLOWDOWN_ENV, BASELINE_SLOWDOWN))
    except ValueError:
        slowdown = BASELINE_SLOWDOWN
    allowed = slowdown * med + iqr + SLOWDOWN_ABS_US
    if now <= allowed:
        return ""
    return (
        f"the baseline side's paired median read {now:.1f} us, {now / med:.2f}x the {med:.1f} us "
        f"baseline.json recorded (allowed: {slowdown:g}x + its IQR {iqr:.1f} us + {SLOWDOWN_ABS_US:g} us = "
        f"{allowed:.1f} us): something slowed the baseline's calls (a patched op it calls, its code "
        "rewritten, or another eval on the GPU)"
    )


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
