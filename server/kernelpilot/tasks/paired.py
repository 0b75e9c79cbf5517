"""The timing/verdict step of `eval`: the candidate timed against its baseline commit in one paired run.

docs/eval-design.md, "The baseline side": the baseline commit is materialized as a detached `git worktree`
in `<task>/.baseline-tree/` (reused while it is at that commit; the task folder is outside the scope check),
so both sides can run now, on the same GPU state, instead of comparing the candidate against samples taken
when the baseline was refreshed.

- time_spec and contract tasks: one `kernelpilot compare` process (never the judging one) loads the spec
  under each root, baseline and candidate kept apart, times them interleaved (ABBA, the task's cold/warm
  mode, NVML clock tags) and returns the per-pair ratio; for a contract task (spec
  `kernelpilot.guard.timed:make`) its observation of each side's work rides along for the guard.
- command tasks: the eval command runs in the baseline tree and in the workdir alternately (A,B,B,A and
  B,A,A,B blocks in turn, `timing.paired.alternate_metrics`); each block's ratio of the printed metric is
  one pair. When the command cannot run in the baseline
  tree (it needs an untracked build product, say), the step falls back to the unpaired comparison against
  baseline.json and the record says `method: unpaired` with the reason.

Owns the baseline tree, the two paired measurements and the EvalRecord fields they fill (method,
ratio_median, ratio_ci, pairs, clocks, speedup, speedup_ci, the medians and samples). It does not check
scope or correctness (`tasks.evaluate`, the guard) and does not write anything but the baseline tree.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import KernelpilotError, StateError, ToolchainError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.host import toolchain
from kernelpilot.tasks.create import CLI_MODULE, LEGACY_CLI_MODULE, interpreter_argv
from kernelpilot.tasks.models import Task
from kernelpilot.timing import clocks, environment, paired
from kernelpilot.timing.commands import OUTPUT_TAIL_CHARS, extract_metric, run_command
from kernelpilot.timing.models import ClockEvidence, CompareRequest, CompareResult
from kernelpilot.timing.stats import judge_ratios, summarize

BASELINE_TREE = ".baseline-tree"


@dataclass
class Timed:
    """What the timing step measured: EvalRecord fields, a message, and the compare result (spec tasks)."""

    fields: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    compare: CompareResult | None = None


def time_spec_of(task: Task) -> str | None:
    """The launch-closure spec of a time_spec task (task.json's `time_spec`, else its `time` argv)."""
    if task.time_spec:
        return task.time_spec
    argv = task.eval_command
    if task.timing_mode and {CLI_MODULE, LEGACY_CLI_MODULE} & set(argv) and "time" in argv:
        i = argv.index("time")
        return argv[i + 1] if i + 1 < len(argv) else None
    return None


def _git(cwd: Path, args: list[str], timeout_s: float = 120) -> str:
    exe = toolchain.require_tool("git")
    try:
        return toolchain.run([str(exe), *args], cwd=cwd, timeout_s=timeout_s, check=True).stdout
    except ToolchainError as exc:
        raise StateError(
            f"git {' '.join(args)} failed in {cwd}: {exc.message}",
            f"remove {BASELINE_TREE}/ in the task folder (`git worktree prune`) and eval again",
        ) from exc


def baseline_tree(workdir: Path, task_dir: Path, commit: str) -> Path:
    """The baseline side's root: `workdir`'s place inside a detached worktree of `commit`."""
    root = environment.git_root(workdir)
    if root is None:
        raise StateError(f"{workdir} is not inside a git repository", "a task's workdir must be one")
    root = root.resolve()
    rel = workdir.resolve().relative_to(root)
    tree = task_dir / BASELINE_TREE
    if (tree / ".git").exists():
        if _git(tree, ["rev-parse", "HEAD"]).strip() == commit:
            return tree / rel
        _git(root, ["worktree", "remove", "--force", str(tree)])
    _git(root, ["worktree", "prune"])
    _git(root, ["worktree", "add", "--detach", str(tree), commit])
    return tree / rel


def _cli_error(stderr: str) -> str:
    """The message of the JSON error `kernelpilot --json` prints last on stderr (else the stderr tail)."""
    start = stderr.rfind("\n{")
    text = stderr[start + 1 :] if start >= 0 else stderr.strip()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return stderr[-OUTPUT_TAIL_CHARS:]
    if isinstance(doc, dict) and "message" in doc:
        return f"{doc.get('type', 'error')}: {doc['message']}" + (
            f" (fix: {doc['hint']})" if doc.get("hint") else ""
        )
    return stderr[-OUTPUT_TAIL_CHARS:]


def compare_request(
    task: Task, spec: str, base_root: Path, workdir: Path, rotate: int = 1, *, observe: bool = False
) -> CompareRequest:
    """What `kernelpilot compare SPEC SPEC --root-a BASE --root-b WORKDIR --label-a baseline --label-b
    candidate --timing MODE --min-effect E --rotate K [--observe]` would time, as the request model."""
    return CompareRequest(
        a=spec, b=spec, workdir=str(workdir), root_a=str(base_root), root_b=str(workdir),
        label_a="baseline", label_b="candidate", timing=task.timing_mode or "cold",
        min_effect=task.min_effect, rotate=rotate, observe=observe,
    )  # fmt: skip


def paired_spec(
    task: Task, spec: str, base_root: Path, workdir: Path, env: dict[str, str], rotate: int = 1,
    *, observe: bool = False,
) -> Timed:  # fmt: skip
    """`kernelpilot compare` of the spec under both roots, in its own process
    (`timing.compare_process`: the comparison without the CLI's imports); the record's fields.

    A factory with a `root` keyword (contract tasks' `kernelpilot.guard.timed:make`) is called with its
    side's root, so one spec loads each tree's own candidate; `rotate` goes to both sides. `observe` adds
    the guard's Watch and activity trace (contract tasks take `guard.steps.run_checked` instead, which
    runs the guard's checks first in the same process)."""
    request = compare_request(task, spec, base_root, workdir, rotate, observe=observe)
    with tempfile.TemporaryDirectory(prefix="kernelpilot-compare-") as tmp:
        path, out = Path(tmp) / "request.json", Path(tmp) / "result.json"
        path.write_text(request.model_dump_json(), encoding="utf-8")
        argv = [sys.executable, "-m", "kernelpilot.timing.compare_process", str(path), str(out)]
        res = toolchain.run(argv, cwd=workdir, env=env, timeout_s=task.timeout_s, check=False)
        result = out.read_text(encoding="utf-8") if out.is_file() else None
    return compare_outcome(res.returncode, res.stdout, res.stderr, result)


def compare_outcome(returncode: int, stdout: str, stderr: str, result: str | None = None) -> Timed:
    """The record's fields from a finished compare process (`timing.compare_process`, `guard.checked`):
    its result file's text when it wrote one (`result`: what the candidate printed cannot garble it), else
    its stdout."""
    if returncode != 0:
        why = _cli_error(stderr)
        return Timed(
            {"status": "failed", "method": "paired", "output_tail": why}, f"paired timing failed: {why}"
        )
    text = stdout if result is None else result
    try:
        cmp = CompareResult.model_validate_json(text)
    except ValueError as exc:
        tail = text[-OUTPUT_TAIL_CHARS:]
        return Timed({"status": "failed", "output_tail": tail}, f"unreadable compare output: {exc}")
    # an unresolved ratio (or none: a side timed at <= 0 us) claims no speed-up; a ratio is still recorded
    ci = cmp.ratio_ci if cmp.verdict != "unstable" else None
    fields = {
        "status": cmp.verdict,
        "method": "paired",
        "speedup": cmp.speedup if ci else None,
        "speedup_ci": [1.0 / ci[1], 1.0 / ci[0]] if ci else None,
        "ratio_median": cmp.ratio_median,
        "ratio_ci": cmp.ratio_ci,
        "pairs": cmp.pairs,
        "clocks": cmp.clocks,
        "baseline_median": cmp.a_stats.median,
        "candidate_median": cmp.b_stats.median,
        "samples": cmp.b_samples,
        "baseline_samples": cmp.a_samples,
    }
    msg = "" if cmp.verdict in ("improved", "regressed", "neutral") else cmp.verdict_note
    return Timed(fields, msg, cmp)


class BaselineUnrunnable(KernelpilotError):
    """The eval command failed in the baseline tree (not the candidate's fault): fall back to unpaired."""

    kind = "baseline_unrunnable"


def _metric(task: Task, cwd: Path, env: dict[str, str], side: str) -> tuple[float, str]:
    out = run_command(
        interpreter_argv(task.eval_command),
        cwd=cwd,
        env=env,
        timeout_s=task.timeout_s,
        field=f"eval_command ({side})",
    )
    return extract_metric(
        out.stdout, out.stderr, regex=task.metric.regex, json_key=task.metric.json_key
    ), out.output_tail


def paired_command(
    task: Task,
    base_root: Path,
    workdir: Path,
    env: dict[str, str],
    runs: int,
    progress: Progress = no_progress,
) -> Timed:
    """The eval command alternated between the baseline tree and the workdir in blocks of A,B,B,A and
    B,A,A,B in turn (`timing.paired.alternate_metrics`); one ratio per block.

    Raises BaselineUnrunnable when the baseline side fails on its first run; a candidate failure raises
    the command's typed error (the caller records `failed`)."""
    blocks = max(2, math.ceil(runs / 2))
    try:
        _metric(task, base_root, env, "baseline")
    except (ToolchainError, KernelpilotError) as exc:
        raise BaselineUnrunnable(
            f"the eval command does not run in the baseline tree: {exc.message}", ""
        ) from exc
    for _ in range(task.warmup):
        _metric(task, workdir, env, "candidate")
    source = clocks.open_visible(env)
    sampler = clocks.ClockSampler(source, 0.05)  # command runs last seconds: a reading every 50 ms
    tail = ""

    def candidate() -> float:
        nonlocal tail
        value, tail = _metric(task, workdir, env, "candidate")
        return value

    def step(j: int, n: int) -> None:
        progress(j, n, f"block {j}/{n} ({'A,B,B,A' if j % 2 else 'B,A,A,B'})")

    try:
        with sampler:
            run = paired.alternate_metrics(
                (lambda: _metric(task, base_root, env, "baseline")[0], candidate), blocks, step
            )
    finally:
        if source is not None:
            source.close()
    ev = clocks.evidence(sampler, [run.span], clocks.DropLog(), clocks.ThrottlePolicy())
    return _command_fields(task, run.a, run.b, run.ratios, ev, tail)


def _command_fields(
    task: Task, base_s: list[float], cand_s: list[float], ratios: list[float], ev: ClockEvidence, tail: str
) -> Timed:
    if not all(math.isfinite(r) and r > 0 for r in ratios):
        msg = "a metric of the eval command is <= 0: a ratio is undefined"
        return Timed({"status": "failed", "method": "paired", "output_tail": f"{msg}\n{tail}"}, msg)
    med, lo, hi, status = judge_ratios(ratios, task.metric.direction, task.min_effect, task.cv_threshold)
    lower = task.metric.direction == "lower"
    claim = status != "unstable"  # an unresolved ratio claims no speed-up (the ratio is still recorded)
    fields = {
        "status": status,
        "method": "paired",
        "speedup": (1.0 / med if lower else med) if claim else None,
        "speedup_ci": ([1.0 / hi, 1.0 / lo] if lower else [lo, hi]) if claim else None,
        "ratio_median": med,
        "ratio_ci": [lo, hi],
        "pairs": len(ratios),
        "clocks": ev,
        "baseline_median": summarize(base_s).median,
        "candidate_median": summarize(cand_s).median,
        "samples": cand_s,
        "baseline_samples": base_s,
        "output_tail": tail,
    }
    msg = "" if status != "unstable" else (
        f"the paired ratio is not resolved (CI {lo:.4f}-{hi:.4f}): no speed-up claimed; measure again"
    )  # fmt: skip
    return Timed(fields, msg)
