"""Models of sweeps: the TOML spec, a ledger shape, what a worker returns per cell, and the results.

Cheap to import (pydantic only): the capability declarations and the MCP schemas read these.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kernelpilot.experiments.api import DB_HELP
from kernelpilot.foundation.models import Request, Result
from kernelpilot.roofline.models import OpKind

VARIANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
LEDGER_META = ("model", "stage", "dtype", "weight")  # ledger keys that are not shape fields


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VariantSpec(_Spec):
    """One column of the sweep: a Python factory or a command template, with its correctness check."""

    factory: str | None = Field(
        None,
        description="'file.py:function' taking the shape's fields as keyword arguments and returning a "
        "zero-argument launch closure (its return value is the output checked against `reference`).",
    )
    reference: str | None = Field(
        None, description="Factory variant: 'file.py:function' whose closure returns the expected output."
    )
    command: list[str] | None = Field(
        None, description="Command template (argv list); '{field}' placeholders are filled from the shape."
    )
    metric_regex: str | None = Field(None, description="Command: regex with one group matching the metric.")
    metric_json_key: str | None = Field(None, description="Command: dot key path of the metric in JSON.")
    metric_unit: str = Field("us", description="Command: unit of the printed metric.")
    error_regex: str | None = Field(
        None, description="Command: regex with one group matching the printed max error vs the reference."
    )
    atol: float = Field(1e-6, ge=0, description="Absolute tolerance of the correctness check.")
    rtol: float = Field(1e-4, ge=0, description="Relative tolerance (factory outputs, numpy.allclose).")
    timeout_s: float = Field(300.0, gt=0, description="Command: per-run timeout.")

    @model_validator(mode="after")
    def _one_kind(self) -> VariantSpec:
        if (self.factory is None) == (self.command is None):
            raise ValueError("give exactly one of `factory` or `command`")
        if self.command is not None:
            if (self.metric_regex is None) == (self.metric_json_key is None):
                raise ValueError("a command variant needs exactly one of `metric_regex` or `metric_json_key`")
            if self.reference is not None:
                raise ValueError("`reference` applies to factory variants; commands print `error_regex`")
        elif self.metric_regex or self.metric_json_key or self.error_regex:
            raise ValueError("metric_regex / metric_json_key / error_regex apply to command variants")
        return self


class StopSpec(_Spec):
    """When the optimization may stop, judged on the sweep (profile-optimizer stop conditions)."""

    min_geomean: float | None = Field(None, gt=0, description="Weighted geomean speed-up at least this.")
    min_shape_speedup: float | None = Field(None, gt=0, description="No correct shape below this speed-up.")


class SweepSpec(_Spec):
    """The sweep spec file (TOML)."""

    name: str = Field(min_length=1, max_length=80)
    operator: str = Field(min_length=1, description="Operator signature stored on every cell record.")
    baseline: str = Field(
        description="Variant every other variant is compared against; a candidate of the same kind (both "
        "factories or both commands) is timed together with it at each shape (paired)."
    )
    ledger: str = Field(description="JSONL shape ledger, relative to the spec file.")
    gpu: str | None = Field(None, description="GPU wiki id (or alias) for roofline percentages.")
    roofline_op: OpKind | None = Field(
        None, description="Op whose FLOPs/bytes the roofline counts (default: `operator` if it is one)."
    )
    mode: Literal["cold", "warm"] = Field(
        "warm", description="cold: L2 flushed before every timed run; warm: not."
    )
    runs: int = Field(20, ge=1, le=100000)
    warmup: int = Field(3, ge=0, le=100000)
    direction: Literal["lower", "higher"] = Field("lower", description="Is a lower metric better?")
    parity: float = Field(0.02, ge=0, lt=1, description="Speed-ups within 1 +- parity count as parity.")
    cv_threshold: float = Field(0.02, gt=0, description="A cell is stable when its CV is at most this.")
    stop: StopSpec = Field(default_factory=StopSpec)
    variants: dict[str, VariantSpec]

    @field_validator("variants")
    @classmethod
    def _names(cls, value: dict[str, VariantSpec]) -> dict[str, VariantSpec]:
        if len(value) < 2:
            raise ValueError("a sweep needs at least two variants (a baseline and a candidate)")
        for name in value:
            if not VARIANT_NAME.match(name):
                raise ValueError(
                    f"variant name {name!r} must be 1-32 letters, digits, '_' or '-', starting with a "
                    "letter or digit"
                )
        return value


class Shape(BaseModel):
    """One ledger line: where it came from, its fields, its production weight and its key."""

    line: int = Field(description="1-based line number in the ledger.")
    model: str
    stage: str
    dtype: str
    weight: float
    fields: dict[str, Any] = Field(description="The shape's fields (keyword arguments of the factories).")
    key: str = Field(description="Stable key: hash of the whole ledger line's content.")

    def label(self) -> str:
        dims = ",".join(f"{k}={v}" for k, v in self.fields.items())
        return f"{self.model}/{self.stage} {dims} {self.dtype}"

    def kwargs(self) -> dict[str, Any]:
        """Arguments a factory or command template may use: the fields plus dtype, model and stage."""
        return {**self.fields, "dtype": self.dtype, "model": self.model, "stage": self.stage}


class PairedCell(BaseModel):
    """A candidate cell timed together with the baseline variant at the same shape, in the same worker,
    interleaved in A,B,B,A and B,A,A,B blocks (closures: `timing.compare.compare_sides`; commands:
    `timing.paired.alternate_metrics`): its speed-up comes from the per-pair ratio."""

    ratio_median: float = Field(
        description="Median per-pair ratio candidate/baseline (of times, or of the command's metric)."
    )
    ratio_ci: list[float] = Field(description="95% bootstrap CI of that median.")
    ratios: list[float] = Field(description="Every pair's ratio (the geomean CI resamples them).")
    pairs: int
    baseline_median_us: float = Field(description="The baseline's median in the same run.")
    verdict: str = Field(description="improved / regressed / neutral / unstable (compare's verdict).")
    clocks_note: str = ""
    baseline_samples: list[float] = Field(
        default_factory=list, description="The baseline's samples taken in the same run, in run order."
    )


class CellTiming(BaseModel):
    """What the timing seam returns for one cell (all times in microseconds, or the command's unit)."""

    median_us: float
    samples_us: list[float]
    cv: float
    stable: bool
    method: str = Field(description="cuda_event | cpu_perf_counter_ns | command_metric")
    iqr_us: float = 0.0
    note: str = ""
    paired: PairedCell | None = Field(
        None, description="Candidate factory cells: the paired comparison with the baseline variant."
    )


class CellPhases(BaseModel):
    """Where one cell's time went on its worker (seconds; `*_unix` are the worker's wall clock)."""

    started_unix: float = 0.0
    ended_unix: float = 0.0
    load_s: float = Field(0.0, description="Loading the variant's modules (0 once this worker has them).")
    build_s: float = Field(0.0, description="The factory call(s) building the launch closures and inputs.")
    check_s: float = Field(0.0, description="The correctness run against the reference, and the compare.")
    timing_s: float = Field(0.0, description="Inside the timing engine: warm-up, calibration, timed runs.")


class CellOutcome(BaseModel):
    """What a worker returns for one cell."""

    variant: str
    shape_key: str
    state: Literal["timed", "incorrect", "crashed"]
    timing: CellTiming | None = None
    correct: bool | None = Field(None, description="None when the variant has no correctness check.")
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    check_note: str = ""
    error: str | None = None
    worker_pid: int = 0
    worker_host: str = ""
    visible_devices: str | None = None
    device_name: str | None = None
    wall_s: float = 0.0
    worker: str = Field("", description="The Dask worker's address (its timeline row).")
    phases: CellPhases = Field(default_factory=CellPhases)


# ---------------- results ----------------

Verdict = Literal["win", "parity", "loss", "baseline", "incorrect", "no_baseline", "unstable"]


class CellRow(BaseModel):
    """One recorded cell, as the tables and the dashboard show it."""

    record_id: str
    variant: str
    shape_key: str
    line: int
    label: str
    model: str
    stage: str
    dtype: str
    weight: float
    verdict: Verdict
    median: float | None = Field(None, description="Median in `unit` (None when not timed).")
    unit: str = "us"
    iqr: float | None = None
    cv: float | None = None
    stable: bool | None = None
    method: str | None = None
    gpu: str | None = Field(
        None,
        description="The device the worker that timed this cell saw (its CUDA_/HIP_VISIBLE_DEVICES); "
        "None on CPU.",
    )
    samples: list[float] = Field(
        default_factory=list,
        exclude=True,
        description="Per-run samples (for the CIs; left out of the JSON: `exp get <record_id>` has them).",
    )
    paired_ratios: list[float] = Field(
        default_factory=list,
        exclude=True,
        description="Per-pair ratios when the cell was timed paired with the baseline (for the geomean CI).",
    )
    speedup: float | None = Field(None, description="vs the baseline at this shape (> 1 better).")
    speedup_ci: list[float] | None = Field(None, description="95% bootstrap CI of the cell's speed-up.")
    roofline_pct: float | None = None
    intensity: float | None = Field(None, description="FLOP per byte of the op at this shape.")
    correct: bool | None = None
    max_abs_err: float | None = None
    error: str | None = None


class VariantSummary(BaseModel):
    variant: str
    role: Literal["baseline", "candidate"]
    cells: int
    correct_cells: int
    incorrect: int
    unstable: int = Field(
        description="Baseline: cells with an unstable timing; candidate: cells whose comparison is unstable "
        "(either side's CV over the threshold), so wins + parity + losses + unstable = scored cells."
    )
    geomean: float | None = Field(None, description="Weighted geometric-mean speed-up vs the baseline.")
    geomean_ci: list[float] | None = Field(None, description="95% bootstrap CI (measurement noise).")
    weight_covered: float = Field(0.0, description="Share of the ledger's weight in the geomean.")
    wins: int = 0
    parity: int = 0
    losses: int = 0
    worst: list[CellRow] = Field(default_factory=list, description="Lowest speed-ups first.")
    stop_met: bool | None = Field(None, description="The spec's stop conditions hold (None: none given).")
    stop_note: str = ""


class SweepSummary(Result):
    sweep_id: str
    name: str
    db: str
    operator: str
    gpu: str | None
    mode: str
    baseline: str
    variants: list[str]
    shapes: int
    cells: list[CellRow]
    summaries: list[VariantSummary]
    roofline_note: str = ""
    citations: list[str] = Field(default_factory=list)
    complete: bool = Field(description="Every variant x shape cell is recorded.")
    unreadable: list[str] = Field(
        default_factory=list,
        description="Stored cell records left out because they no longer validate ('<id>: <why>').",
    )

    def render_text(self) -> str:
        out = [
            *(f"left out, invalid stored record: {u}" for u in self.unreadable[:10]),
            f"sweep {self.sweep_id} ({self.name}): {len(self.variants)} variants x {self.shapes} shapes, "
            f"{len(self.cells)} cells recorded in {self.db}"
            + ("" if self.complete else " (INCOMPLETE: re-run to resume)"),
            f"  operator {self.operator}, mode {self.mode}, baseline {self.baseline}, gpu {self.gpu or '-'}",
        ]
        by_shape: dict[str, dict[str, CellRow]] = {}
        labels: dict[str, tuple[int, str]] = {}
        for c in self.cells:
            by_shape.setdefault(c.shape_key, {})[c.variant] = c
            labels[c.shape_key] = (c.line, c.label)
        out.append(
            "per shape (median; speed-up vs baseline; verdict). A 'paired' speed-up is the median of "
            "per-pair ratios timed together with the baseline at that shape, so it need not equal the "
            "ratio of the two medians shown:"
        )
        for key, (line, label) in sorted(labels.items(), key=lambda kv: kv[1][0]):
            parts = []
            for v in self.variants:
                cell = by_shape[key].get(v)
                if cell is None:
                    parts.append(f"{v}: -")
                elif cell.median is None:
                    parts.append(f"{v}: {cell.verdict}")
                else:
                    sp = "" if cell.speedup is None or cell.verdict == "baseline" else f" {cell.speedup:.2f}x"
                    sp += " paired" if sp and cell.paired_ratios else ""
                    on = f" (GPU {cell.gpu})" if cell.gpu else ""
                    parts.append(f"{v}: {cell.median:.4g} {cell.unit}{sp} {cell.verdict}{on}")
            out.append(f"  L{line} {label}: " + "; ".join(parts))
        out.append("per variant:")
        for s in self.summaries:
            if s.role == "baseline":
                out.append(f"  {s.variant} (baseline): {s.correct_cells}/{s.cells} correct")
                continue
            gm = "-" if s.geomean is None else f"{s.geomean:.3f}x"
            ci = "" if not s.geomean_ci else f" [95% CI {s.geomean_ci[0]:.3f}-{s.geomean_ci[1]:.3f}]"
            out.append(
                f"  {s.variant}: weighted geomean {gm}{ci} over {s.weight_covered:.0%} of the weight; "
                f"wins {s.wins} / parity {s.parity} / losses {s.losses}; incorrect {s.incorrect}; "
                f"unstable {s.unstable}"
            )
            if s.worst:
                out.append(
                    "    worst: "
                    + ", ".join(f"L{w.line} {w.label} {w.speedup:.2f}x" for w in s.worst if w.speedup)
                )
            if s.stop_met is not None:
                out.append(f"    stop conditions {'MET' if s.stop_met else 'NOT met'}: {s.stop_note}")
        if self.roofline_note:
            out.append(f"roofline: {self.roofline_note}")
        out.extend(f"  {c}" for c in self.citations)
        return "\n".join(out)


class WorkerShare(BaseModel):
    """One worker's part of the cells phase: how much of it the worker spent inside cells."""

    worker: str
    cells: int
    busy_s: float = Field(description="Sum of its cells' wall times.")
    busy_share: float = Field(description="busy_s / the cells phase (1.0: never idle).")
    head_s: float = Field(description="From the first submit to its first cell's start (start-up, dispatch).")
    gaps_s: float = Field(description="Idle time between its cells (dispatch round trips).")
    tail_s: float = Field(description="From its last cell's end to the end of the cells phase.")


class RunTimeline(BaseModel):
    """Where a sweep run's cells phase went: per worker busy share, per cell medians of each step."""

    cells_phase_s: float = Field(description="First submit to the last cell recorded.")
    warm_s: float = Field(
        0.0, description="Worker warm-up before the phase (imports, CUDA context, profiler), all workers."
    )
    busy_share: float = Field(description="Mean of the workers' busy shares.")
    workers: list[WorkerShare] = Field(default_factory=list)
    order: str = Field("", description="How cells were ordered for submission.")
    median_wait_s: float = Field(0.0, description="Submit to start on a worker (queueing behind others).")
    median_setup_s: float = Field(0.0, description="Load + build + check: the cell's set-up.")
    median_load_s: float = 0.0
    median_build_s: float = 0.0
    median_check_s: float = 0.0
    median_timing_s: float = Field(0.0, description="Inside the timing engine.")
    median_result_s: float = Field(0.0, description="Cell end on the worker to its result in the driver.")
    median_record_s: float = Field(0.0, description="Result in the driver to its record written (batched).")
    median_overhead_s: float | None = Field(
        None,
        description="Per cell, the time it held its worker (end of the previous cell on that worker to its "
        "own end) minus its time inside the timing engine: dispatch, set-up, result hand-off.",
    )
    record_batches: int = Field(0, description="Store transactions the driver wrote the cells in.")
    notes: list[str] = Field(default_factory=list)

    def render_lines(self) -> list[str]:
        ms = 1000.0
        out = [
            f"cells phase {self.cells_phase_s:.1f} s on {len(self.workers)} worker(s), busy "
            f"{self.busy_share:.0%} (worker warm-up before it {self.warm_s:.1f} s; order: {self.order})",
            f"  per cell (median): wait {self.median_wait_s:.2f} s, set-up {self.median_setup_s * ms:.0f} ms "
            f"(load {self.median_load_s * ms:.0f}, build {self.median_build_s * ms:.0f}, check "
            f"{self.median_check_s * ms:.0f}), timing {self.median_timing_s:.3f} s, result "
            f"{self.median_result_s * ms:.0f} ms, record {self.median_record_s * ms:.0f} ms "
            f"({self.record_batches} batch(es))"
            + (
                ""
                if self.median_overhead_s is None
                else f"; overhead beside the timing {self.median_overhead_s * ms:.0f} ms"
            ),
        ]
        out.extend(
            f"  {w.worker}: {w.cells} cells, busy {w.busy_share:.0%} ({w.busy_s:.1f} s), head "
            f"{w.head_s:.2f} s, gaps {w.gaps_s:.2f} s, tail {w.tail_s:.2f} s"
            for w in self.workers
        )
        out.extend(f"  note: {n}" for n in self.notes)
        return out


class SweepRunRequest(Request):
    """Run (or resume) a sweep."""

    spec: str = Field(description="Sweep spec file (TOML): variants, baseline, ledger, gpu, mode.")
    db: str | None = Field(None, description=DB_HELP)
    scheduler: str | None = Field(
        None, description="Address of an existing Dask scheduler, e.g. tcp://host:8786 (default: local)."
    )
    connect_timeout_s: float = Field(
        10.0, gt=0, le=600, description="With --scheduler: seconds to wait for the scheduler to answer."
    )
    workers: int | None = Field(
        None, ge=1, le=1024, description="Local workers (default: one per visible GPU; 1 on --device cpu)."
    )
    device: Literal["auto", "gpu", "cpu"] = Field(
        "auto", description="auto: one worker per visible GPU, else CPU; cpu: CPU timing only."
    )
    label: str = Field(
        "", max_length=32, description="Extra label in the sweep id: re-measure the same spec afresh."
    )
    html: str | None = Field(None, description="Also write the HTML dashboard to this file.")
    mkdir: bool = Field(False, description="Create the missing folders of the files it writes (else refused)")


class SweepRunResult(Result):
    summary: SweepSummary
    new_cells: int = Field(description="Cells measured and recorded by this run.")
    skipped_cells: int = Field(description="Cells already recorded (resumed).")
    cluster: str = Field(description="Where the cells ran.")
    workers: int
    wall_s: float
    html: str | None = None
    timeline: RunTimeline | None = Field(
        None, description="Where the cells phase went (None when no cell ran)."
    )

    def render_text(self) -> str:
        head = (
            f"ran {self.new_cells} new cell(s), skipped {self.skipped_cells} already recorded, on "
            f"{self.cluster} ({self.workers} worker(s)) in {self.wall_s:.1f} s"
        )
        timeline = "" if self.timeline is None else "\n" + "\n".join(self.timeline.render_lines())
        tail = f"\ndashboard: {self.html}" if self.html else ""
        return head + "\n" + self.summary.render_text() + timeline + tail


class SweepReportRequest(Request):
    """Show a recorded sweep."""

    id: str = Field(description="Sweep id (as `sweep run` printed it; `exp list --tag sweep` lists them).")
    db: str | None = Field(None, description=DB_HELP)
    html: str | bool | None = Field(
        None,
        description="Also write the self-contained HTML dashboard to this file ('' or true: "
        "./<sweep id>.html; on the command line a bare --html means that).",
    )
    out: str | None = Field(None, description="Older spelling of html FILE (kept for existing scripts).")
    mkdir: bool = Field(False, description="Create the missing folders of the files it writes (else refused)")


class SweepReportResult(Result):
    summary: SweepSummary
    html: str | None = None

    def render_text(self) -> str:
        return self.summary.render_text() + (f"\ndashboard: {self.html}" if self.html else "")
