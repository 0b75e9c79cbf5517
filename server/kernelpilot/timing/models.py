"""Request/result models of `time_kernel` (cheap to import: pydantic only)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from kernelpilot.foundation.models import Request, Result
from kernelpilot.guard.models import Observation, Rejection
from kernelpilot.timing.commands import coerce_argv
from kernelpilot.timing.stats import DEFAULT_CV_THRESHOLD, SampleStats


class ClockEvidence(Result):
    """What the GPU's clocks did while the work was timed (`timing.clocks`): readings, reasons, drops."""

    source: str = Field(description="nvml | amdsmi | replay | none (clocks not readable here).")
    device: str | None = None
    note: str = Field("", description="One readable line: clocks seen, reasons, drops, whether it held.")
    period_ms: float | None = Field(None, description="Sampling period of the reader thread.")
    readings: int = Field(0, description="Readings taken inside the timed work.")
    sm_mhz_rated_max: float | None = Field(None, description="The GPU's maximum SM clock (NVML/amdsmi).")
    power_limit_w: float | None = Field(None, description="Enforced power limit (read, never set).")
    sm_mhz_min: float | None = None
    sm_mhz_median: float | None = None
    sm_mhz_max: float | None = None
    power_w_median: float | None = None
    power_w_max: float | None = None
    temp_c_max: float | None = None
    reasons_seen: dict[str, float] = Field(
        default_factory=dict, description="Clock-event reason -> share of the readings it was active in."
    )
    slowdown_fraction: float | None = Field(
        None, description="Share of readings with a power or thermal slowdown reason active."
    )
    clock_held: bool | None = Field(
        None,
        description="True: no slowdown reason and the median SM clock within 3 % of the rated maximum; "
        "False: the GPU could not hold its clock for this work; None: not readable.",
    )
    threshold: float = Field(description="Drop a timed window whose SM clock fell under this x rated max.")
    dropped: int = Field(0, description="Timed windows dropped (and redone) for throttling.")
    dropped_why: list[str] = Field(default_factory=list)
    recovery_waits: int = 0
    recovery_wait_s: float = 0.0
    persistent_slowdown: bool = Field(
        False, description="The slowdown outlasted the bounded recovery waits; windows after it were kept."
    )


class TimeRequest(Request):
    """Time either a Python launch closure (`spec`) or a whole command (`command`)."""

    spec: str | None = Field(
        None,
        description="Python factory 'module:function' or 'path/to/file.py:function' returning a zero-arg "
        "launch closure (or a list of closures to rotate through; a `rotate` keyword gets the count).",
    )
    command: list[str] | None = Field(
        None,
        description="Instead of spec: a command as an argv list (repeat --command once per argument, "
        'use --command=-x for dashes, or one JSON list \'["python","bench.py"]\'). Never a shell string.',
    )
    metric_regex: str | None = Field(
        None, description="For command: regex with one capture group matching the metric in the output."
    )
    metric_json_key: str | None = Field(
        None, description="For command: dot key path of the metric in the JSON the command prints (a.b.0.c)."
    )
    metric_unit: str = Field("us", description="Unit of the command's metric (label only).")
    runs: int = Field(
        200, ge=1, le=100000, description="Measured runs per timing mode (GPU) or per command run."
    )
    warmup: int = Field(5, ge=0, le=100000, description="Untimed runs before measuring.")
    warmup_min_ms: float = Field(
        200.0,
        ge=0,
        le=60000,
        description="GPU path: keep warming up until this much wall time has passed, so an idle GPU's "
        "clocks have ramped up before the first timed run.",
    )
    timing: Literal["both", "cold", "warm"] = Field(
        "both",
        description="GPU path: cold = L2 flushed before every launch (comparable to ncu); warm = "
        "back-to-back launches (steady state in a model); both (default) reports the two.",
    )
    verdict: Literal["cold", "warm"] = Field(
        "cold", description="GPU path: which mode `stats`, the stability verdict and comparisons use."
    )
    kernels: bool = Field(
        True,
        description="GPU path: attribute GPU time to each kernel the closure launches (torch.profiler "
        "activity trace over 10 extra calls).",
    )
    cold_timer: Literal["auto", "events", "trace"] = Field(
        "auto",
        description="GPU path, cold mode: auto = each kernel's start to end from the activity trace "
        "(CUPTI/roctracer) plus the offset ncu's gpu__time_duration spans beyond it on this GPU model "
        "(measured per model, `timing.calibration`), else event pairs; events = event pairs net of an empty "
        "pair (the empty pair's reading depends on the host); trace = the traced span alone (as Nsight "
        "Systems shows kernels; about 1.4 us per kernel under ncu on an H100). `cold.derivation` says which.",
    )
    graph: bool = Field(
        True, description="GPU path, warm mode: replay a captured CUDA/HIP graph when the closure allows."
    )
    observe: bool = Field(
        False,
        description="Spec path: watch the closure from outside its code (kernelpilot.guard.observe): timing "
        "functions replaced and threads started since before its module loaded, and (GPU) every kernel it "
        "launches on every stream from the activity trace over 10 extra calls, re-timed with a device-wide "
        "synchronize; `observation` and `rejection` in the result.",
    )
    observe_trace: bool = Field(
        True,
        description="With observe: also take the activity trace (off: only timers and threads are watched).",
    )
    l2_flush: bool = Field(
        False, description="Deprecated: the same as --timing cold (cold mode always flushes the L2)."
    )
    rotate: int = Field(1, ge=1, le=1024, description="Input sets to rotate through (passed as rotate=K).")
    device: Literal["auto", "cuda", "cpu"] = Field(
        "auto", description="auto: CUDA events when torch sees a GPU, else the labelled CPU fallback."
    )
    cv_threshold: float = Field(
        DEFAULT_CV_THRESHOLD, gt=0, description="Stable when stdev/mean <= this fraction (0.02 = 2 percent)."
    )
    timeout_s: float = Field(
        300.0, gt=0, description="Command path: per-run timeout; kills its process group."
    )
    workdir: str = Field(
        ".", description="Directory the command runs in / the spec is resolved from; git state."
    )

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        return coerce_argv(v)


class ColdDerivation(Result):
    """How the cold figure was derived from what the GPU reported (`timing.calibration`).

    Why: the event pair's own overhead differs between hosts of the same GPU (1.2 µs on one H100 host, 2.9 µs
    on another), so a cold figure says which timer it rests on and, where it adds a measured offset, where
    that offset was measured, on what and when."""

    method: Literal["kernel_span_plus_offset", "event_pairs_net_of_floor"] = Field(
        description="kernel_span_plus_offset: each flushed launch's kernel start-to-end from the activity "
        "trace (CUPTI/roctracer) plus, per kernel, the offset ncu's gpu__time_duration spans beyond it; "
        "event_pairs_net_of_floor: the event pair around each flushed launch minus an empty pair "
        "(host-dependent)."
    )
    offset_us_per_kernel: float | None = Field(
        None, description="Added to each kernel's traced span: ncu gpu__time_duration minus that span."
    )
    kernels_per_launch: int | None = Field(None, description="Kernels the closure runs per launch (traced).")
    offset_source: str = Field(
        description="Where the offset was measured: 'table' (this GPU model, recorded runs), 'cache' (ncu "
        "on this GPU, earlier) or 'ncu' (ncu on this GPU, now); 'none' for event pairs."
    )
    gpu: str = Field("", description="The GPU the offset belongs to (name; UUID and driver for a cache).")
    measured_utc: str | None = Field(None, description="When the offset was measured (UTC, ISO 8601).")
    age_days: float | None = Field(None, description="Age of that measurement when this result was made.")
    evidence: list[dict[str, Any]] = Field(
        default_factory=list,
        description="What the offset rests on: one row per machine or kernel measured (ncu and traced µs).",
    )
    event_floor_us: float | None = Field(None, description="Event pairs: the empty pair subtracted.")
    note: str = Field("", description="One readable line.")


class ModeResult(Result):
    """One timing mode of a GPU closure: its samples, statistics and how they were taken."""

    mode: Literal["cold", "warm"]
    method: str = Field(
        description="held_stream_events (cold: event pair per launch, queued behind a spin hold) | "
        "graph_replay (warm: captured graph of N launches replayed) | held_stream_batch (warm: N direct "
        "launches) | unheld_events (no spin kernel available: launch gaps possible) | cpu_perf_counter_ns"
    )
    method_note: str
    launches_per_sample: int = Field(description="Launches inside one sample (warm: sample = elapsed / N).")
    gap_free: bool = Field(
        description="Every kept sample's batch was fully queued before the GPU reached it (observed)."
    )
    resolved: bool = Field(
        description="False when the median is within the timer's resolution of an empty event pair: "
        "then no duration is claimed."
    )
    stats: SampleStats
    samples: list[float]
    derivation: ColdDerivation | None = Field(
        None, description="Cold mode: how the figure was derived (timer, offset, its source and age)."
    )


class KernelShare(Result):
    name: str = Field(description="Kernel (or copy/fill) name as the runtime's activity trace gives it.")
    launches_per_call: float
    duration_us_per_call: float = Field(description="GPU time of this kernel per closure call (warm).")
    median_launch_us: float = Field(description="Median duration of one launch of it.")
    share: float = Field(description="Fraction of the closure's summed kernel time.")


class KernelAttribution(Result):
    calls_profiled: int
    kernels: list[KernelShare]
    kernel_sum_us_per_call: float = Field(description="Sum of every kernel's GPU time per call.")
    source: str


class MachineState(Result):
    """The GPU's clocks and throttle state before and after the measurement, and what to distrust."""

    before: list[dict[str, str]] = Field(default_factory=list)
    after: list[dict[str, str]] = Field(default_factory=list)
    other_processes: list[str] = Field(
        default_factory=list, description="Other processes holding a GPU context during the run."
    )
    warnings: list[str] = Field(default_factory=list)


class TimeResult(Result):
    mode: Literal["callable", "command"]
    target: str = Field(description="The spec or the command line timed.")
    timer: str = Field(
        description="held_stream_events | graph_replay | held_stream_batch | unheld_events | "
        "cpu_perf_counter_ns | command_metric (the verdict mode's method)"
    )
    timer_note: str
    unit: str
    runs: int
    warmup: int
    rotate: int
    l2_flush_bytes: int | None = Field(description="Bytes flushed before each cold launch (2 x L2), or None.")
    verdict_mode: Literal["cold", "warm", "command", "cpu"] = Field(
        description="Which measurement `stats`/`samples` hold and the stability verdict uses."
    )
    stats: SampleStats
    samples: list[float]
    cold: ModeResult | None = Field(None, description="GPU: L2 flushed before every launch.")
    warm: ModeResult | None = Field(None, description="GPU: back-to-back launches.")
    kernels: KernelAttribution | None = Field(None, description="GPU: per-kernel time of one closure call.")
    event_floor_us: float | None = Field(
        None, description="GPU: what an empty event pair queued the same way reads (the timer's floor)."
    )
    machine: MachineState = Field(default_factory=MachineState)
    clocks: ClockEvidence | None = Field(
        None, description="GPU: SM clock, power, temperature and throttle reasons read while it was timed."
    )
    environment: dict[str, Any]
    observation: Observation | None = Field(None, description="With observe: what the guard saw.")
    rejection: Rejection | None = Field(
        None, description="With observe: the guard's judgement of the verdict-mode median (None: none found)."
    )

    def render_text(self) -> str:
        u = self.unit
        lines = [f"timed: {self.target} ({self.mode}; verdict uses {self.verdict_mode})"]
        modes = [m for m in (self.cold, self.warm) if m is not None]
        if modes:
            for m in modes:
                lines.append(_mode_line(m, u))
                lines.append(f"    how: {m.method_note}")
                if m.derivation is not None:
                    lines.append(f"    derived: {m.derivation.note}")
        else:
            s = self.stats
            lines.append(f"  note: {self.timer_note}")
            lines.append(
                f"  median {s.median:.3f} {u}   min {s.min:.3f}   max {s.max:.3f}   IQR {s.iqr:.3f} {u}"
            )
            lines.append(
                f"  CV {s.cv * 100:.2f}%  -> {s.verdict}   ({s.count} runs after {self.warmup} warm-up)"
            )
        if self.rotate > 1:
            lines.append(f"  rotating {self.rotate} input sets")
        if self.event_floor_us is not None:
            lines.append(f"  empty event pair reads {self.event_floor_us:.3f} us (timer floor)")
        if self.kernels is not None:
            k = self.kernels
            lines.append(
                f"  kernels per call ({k.calls_profiled} calls profiled, "
                f"sum {k.kernel_sum_us_per_call:.3f} us):"
            )
            for ks in k.kernels[:8]:
                lines.append(
                    f"    {ks.duration_us_per_call:10.3f} us  {ks.share * 100:5.1f}%  "
                    f"x{ks.launches_per_call:g}  {_short(ks.name)}"
                )
            if len(k.kernels) > 8:
                lines.append(f"    ... {len(k.kernels) - 8} more (see --json)")
        if self.clocks is not None and self.clocks.readings:
            lines.append(f"  clocks while timed: {self.clocks.note}")
        for w in self.machine.warnings:
            lines.append(f"  WARNING: {w}")
        lines += _observation_lines(self.observation, self.rejection)
        env = self.environment
        for g in env.get("gpus", []):
            lines.append(
                f"  GPU {g.get('name')} driver {g.get('driver_version')} SM clock {g.get('clocks.sm')} MHz "
                f"(max {g.get('clocks.max.sm')}) mem clock {g.get('clocks.mem')} MHz"
            )
        v = env.get("versions", {})
        lines.append("  versions: " + ", ".join(f"{k}={val}" for k, val in v.items() if val))
        if env.get("git_commit"):
            lines.append(f"  git {env['git_commit'][:12]} diff {str(env.get('git_diff_hash'))[:12]}")
        return "\n".join(lines)


def _short(name: str, width: int = 90) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _mode_line(m: ModeResult, unit: str) -> str:
    s = m.stats
    if not m.resolved:
        return (
            f"  {m.mode:4s}: below the timer's resolution (median {s.median:.3f} {unit} is within the "
            "resolution of an empty event pair): no duration claimed"
        )
    return (
        f"  {m.mode:4s}: median {s.median:.3f} {unit}  IQR {s.iqr:.3f}  min {s.min:.3f}  max {s.max:.3f}  "
        f"CV {s.cv * 100:.2f}% -> {s.verdict}  [{m.method}, {s.count} samples"
        + (f" x {m.launches_per_sample} launches" if m.launches_per_sample > 1 else "")
        + ("" if m.gap_free else ", GAPS POSSIBLE")
        + "]"
    )


# What identical work compared against itself sat outside its own 95 % CI, at most, over the 39 such
# comparisons recorded on an H100 (tests/fixtures/timing/paired_bench_h100_run{1,2}.json: 0.28 %), rounded up;
# held to those fixtures by tests/timing/test_paired_replay.py. docs/eval-design.md, "A self-compare that
# read regressed".
PLACEMENT_ALLOWANCE = 0.003


class CompareRequest(Request):
    """Compare two launch closures (A = baseline, B = candidate) timed together, interleaved."""

    a: str = Field(description="Baseline factory 'file.py:function' or 'module:function' (as `time` takes).")
    b: str = Field(description="Candidate factory, the same way.")
    workdir: str = Field(".", description="Directory both specs are resolved from (unless root_a/root_b).")
    root_a: str | None = Field(None, description="Resolve A's spec (and its imports) under this directory.")
    root_b: str | None = Field(None, description="Resolve B's spec (and its imports) under this directory.")
    label_a: str = Field("A", description="Name of side A in the result and in errors (e.g. baseline).")
    label_b: str = Field("B", description="Name of side B (e.g. candidate).")
    timing: Literal["cold", "warm"] = Field(
        "cold",
        description="Each sample as `time` takes it: cold = L2 flushed before every launch; warm = "
        "back-to-back launches.",
    )
    min_effect: float = Field(
        0.01,
        ge=0,
        description="Smallest change called improved/regressed (0.01 = 1 percent): the whole CI must lie "
        "beyond it.",
    )
    placement_allowance: float = Field(
        PLACEMENT_ALLOWANCE,
        ge=0,
        lt=0.5,
        description="Each end of the ratio's CI is widened by this fraction before it is judged: the offset "
        "between two allocations of the same work that the per-pair CI cannot see (measured on an H100, "
        "docs/eval-design.md).",
    )
    ci_halfwidth_max: float = Field(
        0.02,
        gt=0,
        description="Unstable when the ratio's CI half-width exceeds this fraction of its median "
        "and the CI does not settle the verdict.",
    )
    target_halfwidth: float = Field(
        0.002, gt=0, description="Stop adding pairs once the CI half-width is within this fraction."
    )
    min_pairs: int = Field(16, ge=2, le=100000, description="At least this many ABBA blocks (pairs).")
    max_pairs: int = Field(400, ge=2, le=100000, description="At most this many pairs.")
    max_wall_s: float = Field(15.0, gt=0, le=3600, description="Wall budget of the interleaved timing loop.")
    warmup: int = Field(5, ge=0, le=100000, description="Untimed calls of each side before measuring.")
    warmup_min_ms: float = Field(
        500.0, ge=0, le=60000, description="Warm both sides up (alternately) for at least this long."
    )
    rotate: int = Field(1, ge=1, le=1024, description="Input sets to rotate through (passed as rotate=K).")
    graph: bool = Field(True, description="Warm mode: replay a captured CUDA/HIP graph when allowed.")
    throttle_threshold: float = Field(
        0.75,
        gt=0,
        le=1,
        description="Drop a block whose SM clock fell under this x the rated maximum while "
        "a power/thermal slowdown was active (NVBench's default 75 percent).",
    )
    recovery_budget_s: float = Field(
        5.0, ge=0, le=600, description="Total wait for the GPU to recover from throttling."
    )
    clock_period_ms: float = Field(5.0, gt=0, le=1000, description="Clock sampling period (NVML/amdsmi).")
    device: Literal["auto", "cuda", "cpu"] = Field(
        "auto", description="auto: GPU events when torch sees a GPU, else the labelled CPU fallback."
    )
    observe: bool = Field(
        False,
        description="After timing, observe each side's GPU work (all streams, threads, replaced "
        "timers) with kernelpilot.guard.observe when it is installed; eval always asks.",
    )


class CompareResult(Result):
    """A paired comparison: per-pair ratio B/A with its CI and verdict, absolute times, clock evidence."""

    a: str
    b: str
    label_a: str
    label_b: str
    method: Literal["paired"] = "paired"
    order: str = Field(
        "ABBA/BAAB", description="Sample order of the blocks, in turn (timing.paired.block_order)."
    )
    timer: str = Field(
        description="held_stream_events | graph_replay | held_stream_batch | cpu_perf_counter_ns"
    )
    timer_note: str
    verdict_mode: Literal["cold", "warm", "cpu"]
    ratio_median: float | None = Field(
        description="Median of per-block time ratios B/A (< 1: B faster); None when a side timed at 0 us or "
        "less (no ratio to judge: `verdict_note` says which side)."
    )
    ratio_ci: list[float] | None = Field(description="Bootstrap CI of that median [low, high].")
    confidence: float
    speedup: float | None = Field(description="1 / ratio_median (> 1: B faster).")
    verdict: Literal["improved", "regressed", "neutral", "unstable"] = Field(
        description="B against A, from the CI against min_effect."
    )
    verdict_note: str
    min_effect: float
    pairs: int = Field(description="ABBA blocks kept (each one ratio).")
    rounds: int
    stop_reason: str
    a_stats: SampleStats
    b_stats: SampleStats
    a_samples: list[float]
    b_samples: list[float]
    ratios: list[float]
    launches_per_sample: list[int] = Field(description="[A, B]: launches inside one sample.")
    gap_free: bool
    output_signature: str = Field(description="What both sides return (shapes, dtypes): checked equal.")
    clocks: ClockEvidence
    wall_s: float = Field(description="Wall time of the whole comparison (loading, warm-up, timing).")
    observations: dict[str, dict[str, Any]] | None = Field(
        None, description="Per side label: what kernelpilot.guard.observe saw (observe=true)."
    )
    watch_findings: list[str] | None = Field(
        None, description="Timing functions replaced / threads started while the factories were loaded."
    )
    environment: dict[str, Any]

    def render_text(self) -> str:
        a, b = self.a_stats, self.b_stats
        run = f"{self.pairs} pairs, {self.rounds} rounds; {self.stop_reason}"
        if self.ratio_median is None or self.ratio_ci is None:
            ratio = f"  ratio {self.label_b}/{self.label_a}: none ({run})"
        else:
            lo, hi = self.ratio_ci
            ratio = (
                f"  ratio {self.label_b}/{self.label_a} {self.ratio_median:.4f}  ({self.confidence:.0%} CI "
                f"{lo:.4f}-{hi:.4f}, {run})"
            )
        lines = [
            f"compare ({self.verdict_mode}, paired {self.order}): {self.label_b} vs {self.label_a} -> "
            f"{self.verdict.upper()}",
            ratio,
            f"  {self.verdict_note}",
            f"  {self.label_a}: median {a.median:.3f} us (CV {a.cv * 100:.2f}%)  {self.a}",
            f"  {self.label_b}: median {b.median:.3f} us (CV {b.cv * 100:.2f}%)  {self.b}",
            f"  how: {self.timer_note}" + ("" if self.gap_free else " (GAPS POSSIBLE)"),
            f"  clocks: {self.clocks.note}",
            f"  wall {self.wall_s:.1f} s",
        ]
        for f in self.watch_findings or []:
            lines.append(f"  WATCH: {f}")
        return "\n".join(lines)


def _observation_lines(obs: Observation | None, rej: Rejection | None) -> list[str]:
    if obs is None:
        return []
    if obs.observed:
        synced = f"{obs.synced_us_per_call:.3f} us" if obs.synced_us_per_call is not None else "-"
        if obs.busy_from == "synchronize":
            how = f"{obs.calls} calls between device-wide synchronizes: at most {synced} of device work"
            out = [f"  observed ({how} per call, within the timed figure's allowance; no trace needed)"]
        else:
            out = [
                f"  observed ({obs.calls} calls traced): device busy {obs.device_busy_us_per_call:.3f} us "
                "per call "
                f"on streams {obs.streams}; with a device-wide synchronize {synced} per call"
            ]
    else:
        out = [f"  unobserved: {obs.why_unobserved}"]
    out += [f"  guard: {f}" for f in obs.watch_findings]
    out.append(f"  guard: REJECTED {rej.status}: {rej.evidence}" if rej else "  guard: nothing found")
    return out
