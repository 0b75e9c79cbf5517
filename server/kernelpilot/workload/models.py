"""Request/result models of the `workload` capabilities (cheap to import: pydantic only).

A `WorkloadResult` is the whole triage of one step: how it was captured, the per-step time budget
(`StepSummary`), every kernel aggregated per step (`WorkloadKernel`), groups by category / ATen op / range /
module / phase (`GroupRow`), the drill-down of the hot set and the ranked `Opportunity` list. It is what
`workload run` and `workload read` return and what `workload diff` and `workload report` read back.

The text views live here, with the models they render: the table keeps the kernels that hold the time (the
hot set and at most `TEXT_ROWS`), the groups their top entries, the opportunities the top `TEXT_OPPS` with
their formula; `workload.views` (HTML) builds on the same cells.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernelpilot.foundation.models import Request, Result
from kernelpilot.timing.commands import coerce_argv

TraceFormat = Literal[
    "auto", "kineto", "rocprof_trace", "rocprof_stats", "nsys_kern_sum", "nsys_gpu_trace", "ncu_csv"
]
Category = Literal[
    "gemm",
    "attention",
    "loss",
    "normalization",
    "elementwise",
    "reduction",
    "copy_memset",
    "communication",
    "other",
]
IdleCauseName = Literal["launch_bound", "synchronization", "memory_copy", "cpu_op", "queued", "unexplained"]
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
    input_shapes: str | None = Field(
        None,
        description="Dims of the inputs of the ATen op that launched it (record_shapes), as compact JSON: a "
        "kernel launched at several shapes has one row per shape.",
    )
    shape_op: str | None = Field(None, description="The ATen op those dims are the inputs of.")
    input_types: list[str] | None = Field(None, description="The op's recorded input types.")
    trace_roofline: dict[str, Any] | None = Field(
        None,
        description="Roofline position computed from the trace's shapes and the cited specs, not measured "
        "(workload/trace_roofline.py): floor_us, bound, share_of_floor, headroom_us_per_step, basis.",
    )
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


class IdleCause(_Model):
    """The GPU's idle time one cause holds (workload/idle.py says how each gap is split)."""

    cause: IdleCauseName
    us_per_step: float = Field(description="Mean over the counted steps.")
    share_of_idle: float
    per_step_us: list[float] = Field(default_factory=list, description="Each counted step's µs (diff CIs).")
    evidence: list[str] = Field(
        default_factory=list,
        description="The largest contributors: API and op, copy direction and bytes, op.",
    )


class IdleGap(_Model):
    """One of the largest idle gaps, split by cause."""

    step: int
    offset_us: float = Field(description="Start of the gap from the step's first device start.")
    dur_us: float
    causes: dict[str, float] = Field(description="cause -> µs of this gap.")
    evidence: list[str] = Field(default_factory=list)
    next_kernel: str = Field(description="Short name of the activity that ended the gap.")
    next_op: str | None = None


class StreamLaunches(_Model):
    """Per stream: launch call -> device start delay (graph replays left out) and queue depth at launch."""

    stream: int | None
    launches: int
    delay_median_us: float | None
    delay_p10_us: float | None
    delay_p90_us: float | None
    delay_max_us: float | None
    queue_depth_median: float = Field(
        description="Activities launched and not yet finished at a launch call."
    )
    queue_depth_p90: float
    queue_depth_max: int


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
        None,
        description="Median over the counted steps of the idle cause launch_bound (workload/idle.py): the "
        "host issued the next work only after the GPU had drained, less synchronisations, copies and ops "
        "that launch nothing.",
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
    per_step_busy_us: list[float] = Field(default_factory=list, description="Each counted step's busy µs.")
    per_step_idle_us: list[float] = Field(default_factory=list, description="Each counted step's idle µs.")
    idle_steps: int | None = Field(
        None,
        description="Steps the medians and the idle causes count: with step ranges all but the last (whose "
        "window lacks the gap to the next step), else the trace's steps.",
    )
    idle_causes: list[IdleCause] = Field(
        default_factory=list, description="Every idle µs by cause; they sum to the mean idle per step."
    )
    top_gaps: list[IdleGap] = Field(default_factory=list, description="The largest gaps, split by cause.")
    streams: list[StreamLaunches] = Field(default_factory=list)


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


class StepTiming(_Model):
    """A step's period measured in a closed loop (k steps back to back, then a synchronize), µs per step:
    the median of the paired samples and its bootstrap interval."""

    median_us: float
    ci_low_us: float
    ci_high_us: float
    samples: int


class Remedy(_Model):
    """One launch-overhead remedy applied to the step and timed paired against eager (ABBA blocks,
    `timing.paired.alternate_metrics`); or why it could not apply."""

    name: Literal["cuda_graph", "torch_compile_reduce_overhead"]
    status: Literal["measured", "not_applicable", "failed", "not_run"]
    why: str | None = Field(None, description="Why it could not apply (capture error, graph breaks, torch).")
    outputs_equal: bool | None = Field(None, description="Its outputs equal eager's (within `tolerance`).")
    tolerance: str | None = None
    max_abs_diff: float | None = None
    eager: StepTiming | None = Field(None, description="Eager's step in the same paired run.")
    remedy: StepTiming | None = None
    ratio: float | None = Field(None, description="Median of paired ratios remedy/eager (< 1: faster).")
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    saving_us_per_step: float | None = Field(None, description="eager − remedy medians, µs/step.")
    notes: list[str] = Field(default_factory=list, description="Graph breaks, cudagraph skips, compile time.")


class RemedyReport(_Model):
    """The measured remedies of the top launch-overhead opportunity, beside the estimate they test."""

    estimate_us_per_step: float | None = Field(None, description="The launch_overhead opportunity's saving.")
    method: str
    remedies: list[Remedy] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    wall_s: float | None = None


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
    remedies: RemedyReport | None = Field(
        None, description="workload run --try-remedies: the launch-overhead remedies measured on the step."
    )
    trace_path: str | None = None
    wall_s: float | None = Field(None, description="Wall time of the whole run.")

    def render_text(self) -> str:
        return render_result(self)

    def answer_keep(self) -> dict[str, int]:
        """Rows an MCP answer keeps while anything else can shrink (adapters/mcp_answer.py): the ranked hot
        set, which the text view lists too, and the three largest opportunities."""
        return {"kernels": max(1, sum(1 for k in self.kernels if k.hot)), "opportunities": 3}


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
    mkdir: bool = Field(False, description="Create the missing folders of the files it writes (else refused)")


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
    try_remedies: bool = Field(
        False,
        description="When the top opportunity is launch overhead (spec only): capture the step as a CUDA "
        "graph and torch.compile(mode='reduce-overhead') it, check outputs equal eager's, time each paired "
        "against eager and report the measured saving next to the estimate.",
    )
    remedies_timeout_s: float = Field(
        60.0, gt=0, description="Wall limit of the remedies child (compile included); what finished is kept."
    )
    out: str | None = Field(None, description="Also write the result JSON here.")
    html: str | None = Field(None, description="Also write the HTML report here.")
    mkdir: bool = Field(False, description="Create the missing folders of the files it writes (else refused)")

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
    level: Literal["kernel", "category", "step", "idle"]
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
        return render_diff(self)


class WorkloadReportRequest(Request):
    """Write the HTML report of a workload result JSON."""

    path: str = Field(description="Result JSON of `workload run/read --out`.")
    out: str = Field(description="HTML file to write.")
    mkdir: bool = Field(False, description="Create the missing folders of the files it writes (else refused)")


class WorkloadReportResult(Result):
    path: str
    bytes: int
    sections: list[str]

    def render_text(self) -> str:
        """One line, like every other report writer (the JSON only with --json)."""
        return f"wrote {self.path} ({self.bytes:,} bytes; sections: {', '.join(self.sections)})"


# ---- text views (sized for an agent's context; the JSON model keeps everything) ----

TEXT_ROWS = 20
DIFF_ROWS = 40
TEXT_OPPS = 6
GROUP_ROWS = 5


def _f(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


def drill_cell(k: WorkloadKernel) -> str:
    d = k.drill or {}
    t = k.trace_roofline or {}
    if not d and isinstance(t.get("share_of_floor"), (int, float)):  # computed from shapes, not measured
        return f"{t.get('bound')} {float(t['share_of_floor']):.0%} of roof (trace)"
    if not d:
        return ""
    if not d.get("ok"):
        return "drill failed"
    share = d.get("roofline_share")
    return f"{d.get('bound', '?')}" + (
        f" {float(share):.0%} of roof" if isinstance(share, (int, float)) else ""
    )


def shape_cell(k: WorkloadKernel) -> str:
    """The launching op and its tensor inputs' dims (record_shapes), e.g. `mm 8x1024,1024x2816`."""
    if not k.input_shapes:
        return ""
    try:
        dims = json.loads(k.input_shapes)
    except ValueError:
        return k.input_shapes
    tensors = ",".join("x".join(str(x) for x in d) for d in dims if isinstance(d, list) and d)
    return f"{(k.shape_op or '').removeprefix('aten::')} {tensors}".strip()


def isa_cell(k: WorkloadKernel) -> str:
    i = k.isa or {}
    if not i:
        return ""
    if not i.get("facts"):
        return "unmatched"
    occ = str(i.get("occupancy") or "-").split(" (")[0]
    src = ""
    if i.get("facts") != "code object":
        src = " (trace)"
    elif i.get("origin") == "cupti module":  # a cubin loaded at run time (workload/loaded_cubins.py)
        src = " (cupti)"
    dyn = f"+{i['dynamic_shared_bytes']}" if i.get("dynamic_shared_bytes") else ""
    return f"r{i.get('registers')} smem {i.get('shared_bytes')}{dyn} occ {occ}{src}"


def step_count(s: StepSummary) -> str:
    """How many steps and how they were told apart: the reader of "3 captured" asked "why 3?" (issue 42)."""
    n = f"{s.steps} step{'s' if s.steps != 1 else ''}"
    if s.marked:
        return f"{n}, told apart by the trace's step ranges"
    return f"{n}: no step ranges, the timeline split evenly" if s.steps > 1 else "1 step: the whole timeline"


def step_lines(r: WorkloadResult) -> list[str]:
    s = r.step
    lines = [f"step ({step_count(s)}): kernels {s.kernel_us:.1f} µs, {s.launches:g} launches"]
    if s.wall_us is not None:
        lines.append(
            f"  wall {s.wall_us:.1f} µs · busy {_f(s.busy_us)} µs · idle {_f(s.idle_us)} µs"
            f" (launch-bound {_f(s.launch_bound_gap_us)} µs) · host waits {_f(s.host_wait_us)} µs"
            f" · launch call {_f(s.launch_call_us, '.2f')} µs"
        )
    if s.event_step_us is not None:
        lines.append(f"  CUDA events without the tracer: {s.event_step_us:.1f} µs/step")
    lines += idle_lines(s)
    return lines


CAUSE_WORDS = {
    "launch_bound": "launch-bound",
    "synchronization": "synchronization",
    "memory_copy": "memory copies",
    "cpu_op": "CPU time in ops that launch nothing",
    "queued": "queued (device kernel-to-kernel latency)",
    "unexplained": "unexplained",
}


def idle_lines(s: StepSummary) -> list[str]:
    """The idle causes (mean µs/step over the counted steps, each with its largest evidence), the launch
    delay and queue depth per stream, and the largest gap."""
    if not s.idle_causes:
        return []
    total = sum(c.us_per_step for c in s.idle_causes)
    counted = f"{s.idle_steps} step{'s' if s.idle_steps != 1 else ''}"
    if s.marked and s.idle_steps is not None and s.idle_steps < s.steps:
        # StepSummary.idle_steps: the last step's window lacks the gap to the next step
        counted += f" of {s.steps}: the last step has no gap to a next one"
    parts = [
        f"{CAUSE_WORDS[c.cause]} {c.us_per_step:.1f} ({c.share_of_idle:.0%})"
        for c in s.idle_causes
        if c.us_per_step > 0 or c.cause == "unexplained"
    ]
    lines = [f"  idle by cause ({total:.1f} µs/step, mean of {counted}): " + "; ".join(parts)]
    for c in s.idle_causes:
        if c.us_per_step > 0 and c.evidence:
            lines.append(f"    {CAUSE_WORDS[c.cause]}: " + "; ".join(c.evidence[:2]))
    for st in s.streams[:3]:
        delay = (
            f"launch -> start median {st.delay_median_us:.1f} µs (p10 {_f(st.delay_p10_us)}, p90 "
            f"{_f(st.delay_p90_us)}, max {_f(st.delay_max_us)})"
            if st.delay_median_us is not None
            else "graph replays only (no per-launch delay)"
        )
        lines.append(
            f"  stream {st.stream}: {st.launches} launches, {delay}; queue depth at launch median "
            f"{st.queue_depth_median:g}, p90 {st.queue_depth_p90:g}, max {st.queue_depth_max}"
        )
    if s.top_gaps:
        g = s.top_gaps[0]
        split = ", ".join(
            f"{CAUSE_WORDS[c]} {us:.1f}" for c, us in sorted(g.causes.items(), key=lambda x: -x[1])
        )
        lines.append(
            f"  largest gap: {g.dur_us:.1f} µs in step {g.step} at +{g.offset_us:.1f} µs before "
            f"{g.next_op or g.next_kernel} ({split})"
        )
    return lines


def render_result(r: WorkloadResult) -> str:
    out = [
        f"workload {r.source} [{r.format}] on {r.gpu or 'unknown GPU'}",
        f"method: {r.method}",
        *step_lines(r),
    ]
    out += [f"note: {n}" for n in r.notes]
    rows = [k for k in r.kernels if k.hot] or r.kernels[:TEXT_ROWS]
    rows = rows + [k for k in r.kernels[:TEXT_ROWS] if k not in rows][: max(0, TEXT_ROWS - len(rows))]
    out.append("")
    out.append(
        f"{'#':>2} {'µs/step':>8} {'share':>6} {'cum':>5} {'n/step':>6} {'med µs':>7}  {'category':<13} "
        f"{'kernel':<62} {'drill / floor':<22} {'isa':<24} op inputs"
    )
    for i, k in enumerate(rows, 1):
        out.append(
            f"{i:>2} {k.us_per_step:8.1f} {k.share:6.1%} {k.cumulative_share:5.0%} {k.launches_per_step:6g} "
            f"{k.launch.median_us:7.2f}  {k.category:<13} {('*' if k.hot else ' ') + k.short_name:<62} "
            f"{drill_cell(k):<22} {isa_cell(k):<24} {shape_cell(k)}".rstrip()
        )
    if len(r.kernels) > len(rows):
        rest = r.kernels[len(rows) :]
        out.append(
            f"   ... {len(rest)} more kernels, {sum(k.us_per_step for k in rest):.1f} µs/step (JSON has all)"
        )
    out.append("* = hot set")
    for level in ("category", "op", "module", "range", "phase"):
        g = [x for x in r.groups if x.level == level][:GROUP_ROWS]
        if g:
            out.append(
                f"by {level}: " + "; ".join(f"{x.key} {x.us_per_step:.1f} µs ({x.share:.0%})" for x in g)
            )
    if r.isa_joined_share is not None or r.drilled_share is not None:
        hot = [k for k in r.kernels if k.hot]
        hot_us = sum(k.us_per_step for k in hot) or 1.0
        from_file = r.isa_code_object_share
        if from_file is None:  # a result written before the field existed
            from_file = (
                sum(k.us_per_step for k in hot if (k.isa or {}).get("facts") == "code object") / hot_us
            )
        out.append(
            f"hot set: ISA facts for {_f((r.isa_joined_share or 0) * 100, '.0f')}% of its GPU time "
            f"({from_file:.0%} from the code objects loaded, the rest from the trace's launch records), "
            f"roofline position for {_f((r.drilled_share or 0) * 100, '.0f')}%"
        )
    if r.unmatched:
        out.append("ISA join unmatched: " + "; ".join(r.unmatched))
    if r.drill_failures:
        out.append("drill-down failed: " + "; ".join(r.drill_failures))
    out.append("")
    out.append("opportunities (µs per step, largest first):")
    if not r.opportunities:
        out.append("  none found above the noise floor")
    for i, o in enumerate(r.opportunities[:TEXT_OPPS], 1):
        out.append(
            f"{i}. [{o.kind}] {o.title}"
            + (f" ({o.share_of_step:.1%} of the step)" if o.share_of_step else "")
        )
        out.append(f"   formula: {o.formula}")
        out += [f"   evidence: {e}" for e in o.evidence]
        out.append(f"   next: {o.next_command}")
    out += remedy_lines(r.remedies)
    if r.wall_s is not None:
        out.append(f"run wall time {r.wall_s:.1f} s")
    return "\n".join(out)


def render_diff(d: WorkloadDiffResult) -> str:
    out = [f"workload diff {d.a} -> {d.b}", f"method: {d.method}", f"verdict: {d.verdict}", ""]
    out.append(
        f"{'level':<8} {'A µs':>8} {'B µs':>8} {'Δ µs':>8} {'Δ %':>7} {'CI µs':>17}  {'verdict':<9} name"
    )
    # the step and idle rows first: the verdict is about them (issue 42: they sat beyond row 40)
    lead = [r for r in d.rows if r.level in ("step", "idle")]
    shown = lead + [r for r in d.rows if r.level not in ("step", "idle")][: max(0, DIFF_ROWS - len(lead))]
    for r in shown:
        ci = (
            f"[{r.ci_low_us:+.2f}, {r.ci_high_us:+.2f}]"
            if r.ci_low_us is not None and r.ci_high_us is not None
            else "-"
        )
        out.append(
            f"{r.level:<8} {_f(r.a_us_per_step):>8} {_f(r.b_us_per_step):>8} {r.delta_us:+8.2f} "
            f"{_f(r.delta_pct, '+.1f'):>7} {ci:>17}  {r.verdict:<9} {r.short_name[:60]}"
        )
    if len(d.rows) > len(shown):
        out.append(f"... {len(d.rows) - len(shown)} more rows in the JSON")
    return "\n".join(out)


def _timing(t: StepTiming | None) -> str:
    return "-" if t is None else f"{t.median_us:.1f} µs [{t.ci_low_us:.1f}, {t.ci_high_us:.1f}]"


def remedy_lines(rep: RemedyReport | None) -> list[str]:
    """Each remedy's measured step and saving beside the estimate, or why it could not apply."""
    if rep is None:
        return []
    est = f"{rep.estimate_us_per_step:.1f} µs/step" if rep.estimate_us_per_step is not None else "none"
    out = ["", f"remedies measured (estimate {est}; {rep.method}):"]
    for m in rep.remedies:
        if m.status != "measured":
            out.append(f"  {m.name}: {m.status.replace('_', ' ')}: {m.why or '-'}")
        else:
            ratio = (
                f"{m.ratio:.3f} [{m.ratio_ci_low:.3f}, {m.ratio_ci_high:.3f}]" if m.ratio is not None else "-"
            )
            out.append(
                f"  {m.name}: eager {_timing(m.eager)} -> {_timing(m.remedy)}, saving "
                f"{_f(m.saving_us_per_step)} µs/step (estimate {est}), ratio {ratio}, outputs equal "
                f"({m.tolerance})"
            )
        out += [f"    note: {n}" for n in m.notes]
    out += [f"  note: {n}" for n in rep.notes]
    return out


# ---- workload isolate (workload/isolate.py) ----


class WorkloadIsolateRequest(Request):
    """Write a standalone benchmark and a reference contract of one kernel of a PyTorch trace."""

    path: str = Field(
        description="A PyTorch profiler trace recorded with record_shapes=True, or the result JSON that "
        "`workload run --save-trace`/`workload read --out` wrote from one."
    )
    kernel: str = Field(
        description="The kernel row: its number in the workload table (1 = the most time) or a part of its "
        "name that matches one row."
    )
    out_dir: str = Field(".", description="Folder the files are written to (created when missing).")
    name: str | None = Field(None, description="File stem: bench_<name>.py (default: from the op and shape).")
    gpu: str | None = Field(None, description="GPU for the roofline arguments (default: the trace's).")


class IsolatedShape(BaseModel):
    """One op signature the trace recorded for the kernel: its inputs and its time."""

    model_config = ConfigDict(extra="forbid")

    op: str
    dims: list[Any]
    types: list[str]
    launches: int
    us: float = Field(description="Kernel time of these launches in the whole trace, µs.")


class WorkloadIsolateResult(Result):
    """The files `workload isolate` wrote, the call they make and what the trace could not give."""

    kernel: str
    row: int = Field(description="The kernel's row in the workload table (1-based).")
    trace: str
    launching_op: str = Field(description="The ATen op that launched the kernel (by External id).")
    called_op: str = Field(description="The call the factory makes (torch.ops.aten.<op>.<overload>).")
    called_dims: list[Any] = Field(default_factory=list, description="The called op's recorded input dims.")
    called_types: list[str] = Field(default_factory=list, description="The called op's recorded input types.")
    shape: IsolatedShape
    other_shapes: list[IsolatedShape] = Field(
        default_factory=list, description="Other signatures the kernel ran at (isolate them with --name)."
    )
    bench: str = Field(description="bench_<name>.py: make() for `kernelpilot time`.")
    contract: str | None = Field(None, description="The contract JSON for `task create --contract`.")
    contract_module: str | None = None
    contract_shapes: list[dict[str, int]] = Field(default_factory=list)
    roofline_args: dict[str, Any] | None = Field(
        None, description="`workspace init --roofline-args` (the op's model in the roofline catalogue)."
    )
    not_recovered: list[str] = Field(
        default_factory=list,
        description="What the trace did not keep, what was used instead, how to capture it.",
    )
    next_commands: list[str] = Field(default_factory=list)

    def render_text(self) -> str:
        out = [
            f"isolated {self.kernel} (row {self.row} of {self.trace})",
            f"  launched by {self.launching_op}; the factory calls {self.called_op}",
            f"  inputs {json.dumps(self.shape.dims)} {self.shape.types} "
            f"({self.shape.launches} launches, {self.shape.us:.1f} µs in the trace)",
            f"wrote {self.bench}",
        ]
        if self.contract:
            shapes = "; ".join(json.dumps(s) for s in self.contract_shapes)
            out.append(f"wrote {self.contract_module} and {self.contract} (shapes, timed first: {shapes})")
        if self.roofline_args:
            out.append(f"roofline args: {json.dumps(self.roofline_args)}")
        out += [f"not recovered: {n}" for n in self.not_recovered]
        if self.other_shapes:
            out.append(
                "other shapes of this kernel: "
                + "; ".join(f"{s.op} {json.dumps(s.dims)} ({s.us:.1f} µs)" for s in self.other_shapes[:4])
            )
        out += [f"next: {c}" for c in self.next_commands]
        return "\n".join(out)
