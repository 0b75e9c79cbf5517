"""Models of tasks, baselines, eval results (`EvalRecord`, the `result.json` format) and the ledger (cheap to
import)."""

from __future__ import annotations

import shlex
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelpilot.foundation.models import Request, Result
from kernelpilot.guard.models import (
    Contract,
    Observation,
    PhysicsCheck,
    Rejection,
    RejectStatus,
)
from kernelpilot.timing.commands import coerce_argv, coerce_argv_list
from kernelpilot.timing.instrumentation import DEFAULT_STRIP_ENV
from kernelpilot.timing.models import ClockEvidence
from kernelpilot.timing.stats import DEFAULT_CV_THRESHOLD, SampleStats

SCHEMA_VERSION = 1
LEDGER_VERSION = 1

Status = Literal[
    "improved",
    "regressed",
    "neutral",
    "unstable",
    "failed",
    "correctness_failed",
    "out_of_scope",
    "needs_baseline",
    RejectStatus,
]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]  # nested Literal: flattened
# The statuses a verdict is reached with; every other one is a failure and never a win.
VERDICTS = ("improved", "regressed", "neutral")


class Metric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    direction: Literal["lower", "higher"]
    unit: str = ""
    regex: str | None = None
    json_key: str | None = None


class TaskEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    set: dict[str, str] = Field(default_factory=dict, description="Variables set for every command.")
    strip: list[str] = Field(default_factory=lambda: list(DEFAULT_STRIP_ENV))
    stripped_at_creation: list[str] = Field(
        default_factory=list, description="Names present (and stripped) when the task was created."
    )


class Task(BaseModel):
    """task.json."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    name: str
    op: str = ""
    shapes: list[str] = Field(default_factory=list)
    dtypes: list[str] = Field(default_factory=list)
    description: str = ""
    workdir: str = Field(description="Repository root, relative to the task folder.")
    eval_command: list[str]
    correctness_commands: list[list[str]] = Field(default_factory=list)
    metric: Metric
    timing_mode: Literal["cold", "warm"] | None = Field(
        None, description="GPU timing the metric is (time_spec tasks); None: the command's own metric."
    )
    time_spec: str | None = Field(
        None,
        description="The launch-closure factory of a time_spec task: eval times it paired against the "
        "baseline commit's (tasks.paired).",
    )
    allowed_files: list[str]
    # the ranges `CreateTaskRequest` enforces, held on read too: a hand-edited task.json gets no more
    runs: int = Field(10, ge=2, le=10000)
    warmup: int = Field(1, ge=0, le=1000)
    cv_threshold: float = Field(DEFAULT_CV_THRESHOLD, gt=0, allow_inf_nan=False)
    min_effect: float = Field(0.01, ge=0, allow_inf_nan=False)
    timeout_s: float = Field(600.0, gt=0, le=7 * 86400, allow_inf_nan=False)
    environment: TaskEnvironment = Field(default_factory=TaskEnvironment)
    contract: Contract | None = Field(
        None,
        description="The reference contract (kernelpilot.guard): the guard harness checks correctness and "
        "the timing is observed; None: free-form commands only (unguarded).",
    )
    created: str = ""


_METRIC_BASIS = (
    "What the metric's numbers are when they are not what its name says: a time_spec task timed where no GPU "
    "is usable holds CPU wall time (`kernelpilot time`'s CPU fallback), not GPU time; empty otherwise."
)


class Baseline(BaseModel):
    """baseline.json."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    task: str
    task_hash: str = Field(description="Hash of the measurement-defining task fields; a change stales it.")
    commit: str
    diff_hash: str | None
    metric: str
    direction: Literal["lower", "higher"]
    samples: list[float]
    stats: SampleStats
    stable: bool
    created: str
    environment: dict[str, Any]
    metric_basis: str = Field("", description=_METRIC_BASIS)


class EvalRecord(Result):
    """result.json of one eval (`experiments.ingest` reads it). A ledger line adds ledger_version."""

    schema_version: int = SCHEMA_VERSION
    task: str
    status: Status
    speedup: float | None
    speedup_ci: list[float] | None
    baseline_median: float | None
    candidate_median: float | None
    metric: str
    direction: Literal["lower", "higher"]
    samples: list[float]
    baseline_samples: list[float]
    commit: str | None
    diff_hash: str | None
    changed_files: list[str]
    output_tail: str
    created: str
    environment: dict[str, Any]
    timing_mode: Literal["cold", "warm"] | None = Field(
        None, description="The GPU timing the verdict used (time_spec tasks), else None (command metric)."
    )
    metric_basis: str = Field("", description=_METRIC_BASIS)
    method: Literal["paired", "unpaired"] | None = Field(
        None,
        description="paired: baseline and candidate timed now, interleaved (ABBA and BAAB blocks in turn), "
        "verdict from the per-pair ratio; unpaired: the candidate against baseline.json's samples (why in "
        "output_tail).",
    )
    ratio_median: float | None = Field(
        None, description="Paired: median per-pair ratio candidate/baseline of the metric."
    )
    ratio_ci: list[float] | None = Field(None, description="Paired: 95% bootstrap CI of that median.")
    pairs: int | None = Field(None, description="Paired: ABBA blocks kept (one ratio each).")
    clocks: ClockEvidence | None = Field(
        None, description="SM clock, power, temperature and throttle reasons seen while timing; drops."
    )
    guarded: bool = Field(
        False, description="The contract harness checked correctness (False: unguarded free-form commands)."
    )
    rejection: Rejection | None = Field(
        None, description="Why the guard rejected the candidate (check, evidence)."
    )
    correctness: str = Field("", description="What the guard harness checked and the largest errors it saw.")
    observation: Observation | None = Field(None, description="What the guard saw of the timed closure.")
    physics: PhysicsCheck | None = Field(None, description="The candidate time against the roofline floor.")
    judge: dict[str, Any] | None = Field(
        None,
        description="The isolated judge's summary (contract tasks): calls per timed batch, timed calls "
        "checked "
        "against the reference, the runners' sandbox, where the judge's time went.",
    )


# ---- requests / results of the capabilities ----


class CreateTaskRequest(Request):
    name: str = Field(description="Task name (letters, digits, '-', '_', '.').")
    eval_command: list[str] = Field(
        default_factory=list,
        description="Command that prints the metric, as an argv list (repeat --eval-command per argument, "
        "--eval-command=-x for dashes, or one JSON list). Never a shell string. Or give time_spec.",
    )
    time_spec: str | None = Field(
        None,
        description="Instead of eval_command: a launch-closure factory 'file.py:function' (as `kernelpilot "
        "time` takes); each eval run is one `kernelpilot time` process and its timing_mode median is the "
        "metric (time_us, lower is better).",
    )
    timing_mode: Literal["cold", "warm"] = Field(
        "cold", description="With time_spec: the GPU timing the verdict uses (cold = L2 flushed, like ncu)."
    )
    metric_name: str = Field("time_us", description="Name of the metric (e.g. time_us, tflops).")
    direction: Literal["lower", "higher"] = Field("lower", description="Which way is better.")
    metric_regex: str | None = Field(None, description="Regex with one capture group matching the metric.")
    metric_json_key: str | None = Field(None, description="Dot key path of the metric in printed JSON.")
    metric_unit: str = Field("", description="Unit label of the metric (e.g. us).")
    allowed_file: list[str] = Field(
        description="A file (or glob) relative to workdir an agent may edit; repeatable. Edits elsewhere "
        "make an eval out_of_scope."
    )
    contract: str | None = Field(
        None,
        description="A JSON file (relative to workdir) holding the reference contract (docs/guard.md): "
        "inputs factory, reference, candidate entry point, shapes, dtype, tolerance, in-place. kernelpilot's "
        "guard harness then checks correctness and observes the timing; eval/time_spec are not given.",
    )
    correctness_command: list[list[str]] = Field(
        default_factory=list,
        description='A correctness check as a JSON argv list \'["python","check.py"]\'; repeatable; '
        "each must "
        "exit 0 before timing.",
    )
    op: str = Field("", description="The operation (e.g. 'softmax over rows').")
    shape: list[str] = Field(default_factory=list, description="A problem shape, e.g. 4096x4096; repeatable.")
    dtype: list[str] = Field(default_factory=list, description="A data type, e.g. bf16; repeatable.")
    description: str = Field("", description="Free text for TASK.md.")
    workdir: str = Field(".", description="Git repository root the commands run in.")
    task_dir: str | None = Field(
        None, description="Where task.json goes [default: <workdir>/.kernelpilot/tasks/<name>]."
    )
    runs: int = Field(10, ge=2, le=10000, description="Measured runs per eval.")
    warmup: int = Field(1, ge=0, le=1000, description="Untimed runs before measuring.")
    cv_threshold: float = Field(
        DEFAULT_CV_THRESHOLD,
        gt=0,
        allow_inf_nan=False,
        description="Stable when CV <= this (0.02 = 2 percent).",
    )
    min_effect: float = Field(
        0.01,
        ge=0,
        allow_inf_nan=False,
        description="Smallest speed-up fraction called improved/regressed (0.01 = 1 percent).",
    )
    timeout_s: float = Field(
        600.0,
        gt=0,
        le=7 * 86400,
        allow_inf_nan=False,
        description="Per-command timeout; kills its process group.",
    )
    env: list[str] = Field(default_factory=list, description="KEY=VALUE set for every command; repeatable.")
    strip_env: list[str] = Field(
        default_factory=list, description="Extra variable names (or PREFIX*) to strip; repeatable."
    )
    overwrite: bool = Field(False, description="Replace an existing task.json.")

    @field_validator("eval_command", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        return coerce_argv(v)

    @field_validator("correctness_command", mode="before")
    @classmethod
    def _argvs(cls, v: Any) -> Any:
        return coerce_argv_list(v)


class CreateTaskResult(Result):
    task_dir: str = Field(description="task folder, relative to the task's workdir")
    task_json: str
    task_md: str
    task: Task
    task_dir_here: str = Field(
        "",
        description="the task folder as given to `kernelpilot eval` from the directory the task was created "
        "in (relative below it, else absolute): what `next` prints",
    )

    def render_text(self) -> str:
        t = self.task
        where = shlex.quote(self.task_dir_here or self.task_dir)
        return "\n".join(
            [
                f"task {t.name!r} written: {self.task_json}, {self.task_md}",
                f"  eval: {shlex.join(t.eval_command)}  metric {t.metric.name} ({t.metric.direction} is "
                "better)",
                f"  allowed files: {', '.join(t.allowed_files)}",
                f"  correctness: {len(t.correctness_commands)} command(s)",
                f"  stripped now: {', '.join(t.environment.stripped_at_creation) or 'none'}",
                f"next: kernelpilot eval {where} --refresh-baseline",
            ]
        )


class EvaluateRequest(Request):
    task: str = Field(description="Task folder (holding task.json) or the task.json path.")
    refresh_baseline: bool = Field(
        False, description="Measure the current commit as the baseline (writes baseline.json)."
    )
    runs: int | None = Field(None, ge=2, le=10000, description="Override the task's measured runs.")
    allow_dirty_baseline: bool = Field(
        False, description="Allow a baseline from a tree with uncommitted changes (not recommended)."
    )
    record_db: str | None = Field(
        None,
        description="Also record the candidate's result in the experiment database: a SQLite path, a "
        "postgresql:// URL, or 'default' for the default store (KERNELPILOT_DB / XDG data dir).",
    )
    change: str | None = Field(
        None, description="With record_db: what this candidate changed, in a few words (the record summary)."
    )
    parent_id: str | None = Field(
        None, description="With record_db: the experiment record this one started from."
    )


class EvaluateResult(Result):
    mode: Literal["baseline", "candidate"]
    record: EvalRecord | None = Field(None, description="The candidate's result.json (an EvalRecord).")
    baseline: Baseline | None = Field(None, description="The baseline written (refresh mode).")
    written: list[str] = Field(
        default_factory=list, description="Files written, relative to the task folder."
    )
    message: str = ""
    recorded_ids: list[str] = Field(
        default_factory=list,
        description="Experiment-database record ids this eval was stored as (record_db).",
    )

    def render_text(self) -> str:
        if self.mode == "baseline" and self.baseline is not None:
            b = self.baseline
            s = b.stats
            return "\n".join(
                [
                    f"baseline for {b.task!r} at {b.commit[:12]}: median {s.median:g} {b.metric} "
                    f"(min {s.min:g}, max {s.max:g}, CV {s.cv * 100:.2f}% {s.verdict}, {s.count} runs)",
                    *([f"  {b.metric} here is {b.metric_basis}"] if b.metric_basis else []),
                    *([self.message] if self.message else []),
                    f"written: {', '.join(self.written)}",
                ]
            )
        r = self.record
        assert r is not None
        lines = [f"status: {r.status.upper()}  task {r.task!r}  metric {r.metric} ({r.direction} is better)"]
        if r.metric_basis:
            lines.append(f"  {r.metric} here is {r.metric_basis}")
        if r.speedup is not None and r.speedup_ci is not None:
            lines.append(
                f"  speed-up {r.speedup:.4f}x  (95% CI {r.speedup_ci[0]:.4f}-{r.speedup_ci[1]:.4f})  "
                f"baseline median {r.baseline_median:g} -> candidate median {r.candidate_median:g}"
            )
        elif r.candidate_median is not None:
            lines.append(f"  candidate median {r.candidate_median:g}, baseline median {r.baseline_median}")
        if r.method == "paired" and r.ratio_median is not None and r.ratio_ci is not None:
            lines.append(
                f"  paired (baseline commit and candidate timed together, A,B,B,A / B,A,A,B): ratio "
                f"candidate/baseline {r.ratio_median:.4f} (95% CI {r.ratio_ci[0]:.4f}-{r.ratio_ci[1]:.4f}, "
                f"{r.pairs} pairs)"
            )
        elif r.method == "unpaired":
            lines.append("  unpaired: the candidate now against baseline.json's samples (see the message)")
        if r.clocks is not None and r.clocks.note:
            lines.append(f"  clocks: {r.clocks.note}")
        if r.changed_files:
            lines.append(f"  changed files: {', '.join(r.changed_files)}")
        if self.message:
            lines.append(f"  {self.message}")
        if r.rejection is not None:
            lines.append(f"  REJECTED by the guard ({r.rejection.check}): {r.rejection.evidence}")
            lines.append("  a rejected candidate is never a win: fix the cause, do not report a speed-up")
        if r.physics is not None:
            p = r.physics
            lines.append(
                f"  physics: {p.arithmetic}"
                + ("  FLAGGED for review (beyond 95% of the attainable roof)" if p.flagged else "")
                if p.checked
                else f"  physics: skipped ({p.skipped_why})"
            )
        if r.correctness:
            lines.append(f"  guard harness: {r.correctness}")
        if not r.guarded:
            lines.append("  unguarded: correctness is only what the task's commands check (no contract)")
        if r.status in ("failed", "correctness_failed", "out_of_scope", "needs_baseline") and r.output_tail:
            lines.append("  --- output tail ---\n" + r.output_tail[-1500:])
        lines.append(f"written: {', '.join(self.written)}")
        if self.recorded_ids:
            lines.append(f"recorded in the experiment database: {', '.join(self.recorded_ids)}")
        return "\n".join(lines)

    def cli_exit_code(self) -> int:
        if self.record is None:
            return 0
        return 0 if self.record.status in VERDICTS else 3


class LedgerRequest(Request):
    task: str = Field(description="Task folder (or a ledger.jsonl path).")
    last: int | None = Field(None, ge=1, description="Only the last N entries.")
    status: str | None = Field(None, description="Only entries with this status.")


class LedgerResult(Result):
    ledger: str
    entries: list[dict[str, Any]]
    total: int
    corrupt_lines: list[int]

    def render_text(self) -> str:
        lines = [
            f"ledger {self.ledger}: {self.total} entries"
            + (
                f" ({len(self.corrupt_lines)} unreadable lines: {self.corrupt_lines})"
                if self.corrupt_lines
                else ""
            )
        ]
        lines.append(
            f"{'created':<26} {'status':<19} {'speedup':>8} {'CI':>17} {'method':<8} {'ratio':>7} "
            f"{'pairs':>5} {'SM MHz':>9} {'commit':<12} changed"
        )
        for e in self.entries:
            sp, ci, ratio = e.get("speedup"), e.get("speedup_ci"), e.get("ratio_median")
            clk = e.get("clocks") or {}
            sm = clk.get("sm_mhz_median") if isinstance(clk, dict) else None
            cells = [
                f"{str(e.get('created', ''))[:26]:<26}",
                f"{e.get('status', '?')!s:<19}",
                f"{_num(sp, '{:.3f}x'):>8}",
                f"{_ci(ci):>17}",
                f"{e.get('method') or '-'!s:<8}",
                f"{_num(ratio, '{:.4f}'):>7}",
                f"{e.get('pairs') or '-'!s:>5}",
                f"{_num(sm, '{:.0f}'):>9}",
                f"{str(e.get('commit') or '-')[:12]:<12}",
                ",".join(str(f) for f in files) if isinstance(files := e.get("changed_files"), list) else "",
            ]
            lines.append(" ".join(cells))
        return "\n".join(lines)


def _num(value: Any, fmt: str) -> str:
    """A ledger entry's number, or '-': entries are the file's own dicts (a hand edit may hold anything)."""
    return fmt.format(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def _ci(ci: Any) -> str:
    if isinstance(ci, list) and len(ci) == 2 and all(_num(v, "") == "" for v in ci):
        return f"{ci[0]:.3f}-{ci[1]:.3f}"
    return "-"
