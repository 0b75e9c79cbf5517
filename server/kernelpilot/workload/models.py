"""Request/result models of the `workload` capabilities (cheap to import: pydantic only).

A `WorkloadResult` is the whole triage of one step: how it was captured, the per-step time budget
(`StepSummary`), every kernel aggregated per step (`WorkloadKernel`), groups by category / ATen op / range /
module / phase (`GroupRow`), the drill-down of the hot set and the ranked `Opportunity` list. It is what
`workload run` and `workload read` return and what `workload diff` and `workload report` read back.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelpilot.foundation.models import Request, Result
from kernelpilot.timing.commands import coerce_argv

TraceFormat = Literal[
    "auto", "kineto", "rocprof_trace", "rocprof_stats", "nsys_kern_sum", "nsys_gpu_trace", "ncu_csv"
]
Category = Literal[
    "gemm", "attention", "normalization", "elementwise", "reduction", "copy_memset", "communication", "other"
]
GroupLevel = Literal["category", "op", "range", "module", "phase"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class CaptureTarget(_Model):
    """What to run: a step closure (`spec`) or a whole command with a region (the drill-down takes it too)."""

    spec: str | None = Field(None, description="Step factory 'file.py:function' or 'module:function'.")
    command: list[str] | None = Field(None, description="Instead of spec: a program (argv list).")
    workdir: str = Field(".", description="Working directory (spec paths are relative to it).")
    warmup: int = Field(5, ge=0, description="Untimed steps before the captured ones.")
    region: str | None = Field(
        None,
        description="Command: NVTX range that marks one step (else the program's cudaProfilerStart/Stop).",
    )
    skip_steps: int = Field(0, ge=0, description="Command with region: range instances skipped first.")
    factory_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of the factory."
    )


class KernelStats(_Model):
    """Per-launch duration statistics of one kernel name, in µs."""

    median_us: float
    min_us: float
    max_us: float


class WorkloadKernel(_Model):
    """One kernel name aggregated over the captured steps."""

    name: str = Field(description="Full name as the trace printed it.")
    short_name: str
    key: str = Field(description="Normalised name (the join and diff key).")
    category: Category
    rule: str = Field(description="The category rule that matched (workload/categories.py).")
    launches_per_step: float
    us_per_step: float
    share: float = Field(description="Share of the step's kernel time.")
    cumulative_share: float
    launch: KernelStats
    per_step_us: list[float] = Field(default_factory=list, description="Its µs in each step (diff CIs).")
    ops: list[str] = Field(default_factory=list, description="ATen ops that launched it, most time first.")
    ranges: list[str] = Field(default_factory=list, description="record_function / NVTX ranges around it.")
    modules: list[str] = Field(default_factory=list, description="nn.Module paths around it.")
    phases: list[str] = Field(default_factory=list)
    grid: list[int] | None = None
    block: list[int] | None = None
    input_shapes: str | None = Field(None, description="Shapes of the ATen op's inputs (record_shapes).")
    graph_launched: bool = Field(False, description="Launched by a CUDA/HIP graph replay.")
    launch_record: dict[str, Any] | None = Field(
        None,
        description="The trace's record of one launch (Kineto: registers per thread, shared memory, grid).",
    )
    hot: bool = False
    drill: dict[str, Any] | None = Field(
        None, description="The drill-down's DrillResult (workload/drill.py)."
    )
    isa: dict[str, Any] | None = Field(None, description="The join's JoinedKernel (workload/join.py).")


class StepSummary(_Model):
    """The step's time budget (medians over steps), µs."""

    steps: int
    marked: bool = Field(False, description="Steps were told apart by step ranges in the trace.")
    wall_us: float | None = Field(
        description="GPU-timeline step period; no step ranges: the trace's span / steps; None: no timeline"
    )
    busy_us: float | None = Field(description="Union of device activity in the step.")
    idle_us: float | None = Field(description="wall - busy: gaps where the GPU ran nothing.")
    kernel_us: float = Field(description="Sum of kernel durations per step (overlap counted twice).")
    launches: float = Field(description="Device activities (kernels, copies, fills) per step.")
    launch_bound_gap_us: float | None = Field(
        None, description="Idle where the next launch call started after the GPU had drained (host too slow)."
    )
    host_wait_us: float | None = Field(
        None,
        description="Host time in synchronising calls (cudaStreamSynchronize, blocking copies) per step.",
    )
    launch_call_us: float | None = Field(None, description="Median host cost of one launch call.")
    event_step_us: float | None = Field(None, description="Step time by CUDA events without the tracer.")
    per_step_wall_us: list[float] = Field(
        default_factory=list,
        description="Each step's period, µs (the last step, which has no end, left out).",
    )


class GroupRow(_Model):
    level: GroupLevel
    key: str
    us_per_step: float
    share: float
    launches_per_step: float
    kernels: int


class Opportunity(_Model):
    """Time a change could win back, µs per step, with the formula and its inputs."""

    kind: Literal["headroom", "launch_overhead", "fusion"]
    title: str
    saving_us_per_step: float
    share_of_step: float | None
    formula: str
    evidence: list[str] = Field(default_factory=list)
    kernels: list[str] = Field(default_factory=list, description="Short names of the kernels concerned.")
    next_command: str


class WorkloadResult(Result):
    """Triage of one workload step."""

    source: str = Field(description="Trace file or capture it came from.")
    format: str
    method: str = Field(description="How it was captured or read, with its limits.")
    gpu: str | None = None
    notes: list[str] = Field(default_factory=list)
    step: StepSummary
    kernels: list[WorkloadKernel]
    groups: list[GroupRow] = Field(default_factory=list)
    hot_share: float = Field(0.8, description="The hot set covers this share of kernel time.")
    unmatched: list[str] = Field(default_factory=list, description="Hot kernels the ISA join did not match.")
    isa_joined_share: float | None = Field(
        None,
        description="Share of the hot set's GPU time whose kernels got ISA facts (from a code object the "
        "process loaded, or from the trace's launch record for kernels no file holds).",
    )
    isa_code_object_share: float | None = Field(
        None,
        description="Share of the hot set's GPU time whose ISA facts come from a code object the "
        "process loaded (a mapped library, a cubin captured through CUPTI, the Triton cache): registers, "
        "shared memory and the occupancy limiter read from the code itself.",
    )
    isa_trace_share: float | None = Field(
        None,
        description="Share of the hot set's GPU time whose ISA facts come only from the trace's launch "
        "record (registers and shared memory; no spills, stack or limiter from the code).",
    )
    drilled_share: float | None = Field(
        None, description="Share of the hot set's GPU time whose kernels got a roofline position."
    )
    drill_failures: list[str] = Field(
        default_factory=list, description="'kernel: why' per failed drill-down."
    )
    opportunities: list[Opportunity] = Field(default_factory=list)
    trace_path: str | None = None
    wall_s: float | None = Field(None, description="Wall time of the whole run.")

    def render_text(self) -> str:
        from kernelpilot.workload.views import render_result

        return render_result(self)


class WorkloadReadRequest(Request):
    """Read a recorded trace into the workload breakdown."""

    path: str = Field(description="Trace file: Kineto JSON, rocprofv3 CSV, nsys stats CSV or ncu CSV.")
    format: TraceFormat = Field("auto", description="auto: detect from the content.")
    steps: int | None = Field(
        None, ge=1, description="Steps the trace holds when it carries no step markers (default 1)."
    )
    skip_steps: int = Field(
        0, ge=0, description="Leave out the first N marked steps (warm-up in a trace someone else recorded)."
    )
    hot_share: float = Field(
        0.8, gt=0, le=1, description="Hot set: kernels covering this share of kernel time."
    )
    hot_cap: int = Field(12, ge=1, le=200, description="At most this many hot kernels.")
    out: str | None = Field(None, description="Also write the result JSON here.")
    html: str | None = Field(None, description="Also write the HTML report here.")


class WorkloadRunRequest(Request):
    """Capture a step's steady state, break it down, drill into the hot kernels."""

    spec: str | None = Field(None, description="Step factory 'file.py:function': one call = one step.")
    command: list[str] | None = Field(
        None,
        description="Instead of spec: a program (argv list, or one JSON list); `region` or "
        "cudaProfilerStart/Stop "
        "marks its steps.",
    )
    region: str | None = Field(None, description="Command: NVTX range name that marks one step.")
    skip_steps: int = Field(
        0,
        ge=0,
        le=100000,
        description="Command with region: instances of the range skipped before the profiled steps (the "
        "program's own warm-up steps); the next `steps` instances are profiled.",
    )
    steps: int = Field(10, ge=1, le=1000, description="Profiled steps.")
    warmup: int = Field(5, ge=0, le=10000, description="Untimed steps first.")
    workdir: str = Field(".", description="Working directory.")
    drill: bool = Field(True, description="Profile each hot kernel once with ncu and join its ISA facts.")
    hot_share: float = Field(
        0.8, gt=0, le=1, description="Hot set: kernels covering this share of kernel time."
    )
    hot_cap: int = Field(12, ge=1, le=200, description="At most this many hot kernels.")
    gpu: str | None = Field(None, description="GPU name for cited peaks (default: the one the capture saw).")
    timeout_s: float = Field(300.0, gt=0, description="Per child process (capture, drill-down).")
    save_trace: str | None = Field(None, description="Keep the captured trace at this path.")
    drill_csv: str | None = Field(None, description="Keep the drill-down's ncu raw CSV page at this path.")
    out: str | None = Field(None, description="Also write the result JSON here.")
    html: str | None = Field(None, description="Also write the HTML report here.")

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        return coerce_argv(v)


class WorkloadDiffRequest(Request):
    """Compare two workload results (JSON files of `workload run/read --out`)."""

    a: str = Field(description="Result JSON of the baseline.")
    b: str = Field(description="Result JSON of the candidate.")
    threshold_pct: float = Field(3.0, gt=0, description="A change within this percentage reads as no change.")
    resamples: int = Field(2000, ge=100, le=100000, description="Bootstrap resamples over steps.")
    confidence: float = Field(0.95, gt=0.5, lt=1)


class DiffRow(_Model):
    level: Literal["kernel", "category", "step"]
    key: str
    short_name: str
    a_us_per_step: float | None
    b_us_per_step: float | None
    delta_us: float
    delta_pct: float | None
    ci_low_us: float | None
    ci_high_us: float | None
    verdict: Literal["faster", "slower", "no change", "new", "gone", "unclear"]


class WorkloadDiffResult(Result):
    a: str
    b: str
    method: str
    rows: list[DiffRow]
    hot_changed: list[str] = Field(default_factory=list, description="Hot kernels beyond the threshold.")
    verdict: str

    def render_text(self) -> str:
        from kernelpilot.workload.views import render_diff

        return render_diff(self)


class WorkloadReportRequest(Request):
    """Write the HTML report of a workload result JSON."""

    path: str = Field(description="Result JSON of `workload run/read --out`.")
    out: str = Field(description="HTML file to write.")


class WorkloadReportResult(Result):
    path: str
    bytes: int
    sections: list[str]
