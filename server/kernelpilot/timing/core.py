"""The `time_kernel` capability: one function from TimeRequest to TimeResult."""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from typing import Literal

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.guard.models import Rejection
from kernelpilot.timing import clocks, environment, instrumentation
from kernelpilot.timing.callables import CallableTiming, time_callable
from kernelpilot.timing.commands import check_argv, compile_metric_regex, extract_metric, run_command
from kernelpilot.timing.gpu import ModeTiming
from kernelpilot.timing.models import MachineState, ModeResult, TimeRequest, TimeResult
from kernelpilot.timing.stats import summarize


def _workdir(raw: str) -> Path:
    wd = Path(raw).expanduser()
    if not wd.is_dir():
        raise InputFileError(f"workdir {raw!r} is not a directory", "give an existing directory")
    return wd.resolve()


def measure_command(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None,
    runs: int,
    warmup: int,
    timeout_s: float,
    regex: str | None,
    json_key: str | None,
    field: str = "command",
    progress: Progress = no_progress,
) -> tuple[list[float], str]:
    """Run argv warmup+runs times, returning the metric of each measured run and the last output tail."""
    samples: list[float] = []
    last_tail = ""
    total = warmup + runs
    for i in range(total):
        out = run_command(argv, cwd=cwd, env=env, timeout_s=timeout_s, field=field)
        value = extract_metric(out.stdout, out.stderr, regex=regex, json_key=json_key)
        last_tail = out.output_tail
        if i >= warmup:
            samples.append(value)
        progress(i + 1, total, f"run {i + 1}/{total}")
    return samples, last_tail


# CUDA events: "resolution of around 0.5 microseconds" (CUDA Runtime API reference, cudaEventElapsedTime).
RESOLUTION_US = 0.5


def _mode_result(t: ModeTiming, floor: float | None, cv_threshold: float) -> ModeResult:
    stats = summarize(t.samples_us, cv_threshold)
    resolved = floor is None or stats.median >= RESOLUTION_US  # samples are net of the empty pair
    return ModeResult(
        mode=t.mode,
        method=t.method,
        method_note=t.note,
        launches_per_sample=t.launches_per_sample,
        gap_free=t.gap_free,
        resolved=resolved,
        stats=stats,
        samples=t.samples_us,
        derivation=t.derivation,
    )


def _modes(req: TimeRequest) -> list[Literal["cold", "warm"]]:
    if req.l2_flush and req.timing == "both":
        return ["cold"]
    if req.timing == "both":
        return ["cold", "warm"]
    return [req.timing]


def _clock_sampler(req: TimeRequest) -> clocks.ClockSampler:
    """NVML/amdsmi readings every 20 ms while the closure is timed (GPU path only; `timing.clocks`)."""
    if req.device == "cpu":
        return clocks.ClockSampler(None)
    from kernelpilot.timing.callables import _cuda_torch

    torch = _cuda_torch()
    return clocks.ClockSampler(clocks.open_source(torch) if torch is not None else None, 0.02)


def _time_spec(req: TimeRequest, wd: Path, progress: Progress) -> TimeResult:
    if req.metric_regex or req.metric_json_key:
        raise InvalidArgumentError("metric_regex/metric_json_key apply to command only", "drop them")
    modes = _modes(req)
    verdict = req.verdict if req.verdict in modes else modes[0]
    before = environment.gpu_state()
    sampler = _clock_sampler(req)
    start = time.perf_counter()
    try:
        with sampler:
            t = time_callable(
                req.spec or "",
                cwd=wd,
                runs=req.runs,
                warmup=req.warmup,
                rotate=req.rotate,
                modes=list(modes),
                device=req.device,
                warmup_min_s=req.warmup_min_ms / 1000.0,
                kernels=req.kernels,
                graph=req.graph,
                progress=progress,
                cold_timer=req.cold_timer,
                observe=req.observe,
                observe_trace=req.observe_trace,
            )
    finally:
        if sampler.source is not None:
            sampler.source.close()
    span = [(start, time.perf_counter())]
    clock_ev = clocks.evidence(sampler, span, clocks.DropLog(), clocks.ThrottlePolicy())
    after = environment.gpu_state()
    others = environment.other_gpu_processes(os.getpid()) if before else []
    machine = MachineState(
        before=before,
        after=after,
        other_processes=others,
        warnings=environment.machine_warnings(before, after, others),
    )
    instr = instrumentation.present()
    if instr:
        machine.warnings.append(f"instrumentation variables set in this process: {', '.join(instr)}")
    if clock_ev.clock_held is False:
        machine.warnings.append(
            "the GPU could not hold its clock while this ran (a power or thermal limit was active): the "
            "times are at the limited clock and can differ between runs; compare versions with "
            "`kernelpilot compare` (paired), never two separate `time` runs"
        )
    env = environment.capture(wd)
    env["clocks_before"] = before
    if t.device_name:
        env["torch_device"] = t.device_name
    common = {
        "mode": "callable",
        "target": req.spec,
        "unit": "us",
        "runs": req.runs,
        "warmup": req.warmup,
        "rotate": t.rotate,
        "l2_flush_bytes": t.l2_flush_bytes,
        "machine": machine,
        "environment": env,
        "clocks": clock_ev,
        "observation": t.observation,
    }
    if not t.modes:  # CPU fallback
        assert t.cpu_samples_us is not None
        cpu_note = t.cpu_note
        if "cold" in modes:
            cpu_note += "; cold mode (L2 flush) ignored: no GPU"
        stats = summarize(t.cpu_samples_us, req.cv_threshold)
        cpu = ModeResult(
            mode="warm", method="cpu_perf_counter_ns", method_note=cpu_note, launches_per_sample=1,
            gap_free=True, resolved=True, stats=stats, samples=t.cpu_samples_us,
        )  # fmt: skip
        return TimeResult(
            **common, timer="cpu_perf_counter_ns", timer_note=cpu_note, verdict_mode="cpu",
            stats=stats, samples=t.cpu_samples_us, warm=cpu, rejection=_judge(t, stats.median),
        )  # fmt: skip
    results = {m: _mode_result(v, t.event_floor_us, req.cv_threshold) for m, v in t.modes.items()}
    chosen = results[verdict]
    return TimeResult(
        **common,
        timer=chosen.method,
        timer_note=chosen.method_note,
        verdict_mode=verdict,
        stats=chosen.stats,
        samples=chosen.samples,
        cold=results.get("cold"),
        warm=results.get("warm"),
        kernels=t.attribution,
        event_floor_us=t.event_floor_us,
        rejection=_judge(t, chosen.stats.median),
    )


def _judge(t: CallableTiming, median_us: float) -> Rejection | None:
    """The guard's judgement of the figure this result reports (eval judges again in its own process)."""
    if t.observation is None:
        return None
    from kernelpilot.guard.observe import judge

    return judge(t.observation, median_us)


def time_kernel(req: TimeRequest, progress: Progress = no_progress) -> TimeResult:
    if (req.spec is None) == (req.command is None):
        raise InvalidArgumentError(
            "give exactly one of spec (module:function) or command (argv list)",
            "e.g. `kernelpilot time kern.py:make` or `kernelpilot time --command python --command b.py "
            "--metric-regex 'us=([0-9.]+)'`",
        )
    wd = _workdir(req.workdir)
    if req.spec is not None:
        return _time_spec(req, wd, progress)
    clocks_before = environment.query_gpus()
    instr = instrumentation.present()
    assert req.command is not None
    argv = check_argv(req.command, "command")
    if (req.metric_regex is None) == (req.metric_json_key is None):
        raise InvalidArgumentError(
            "a command needs exactly one of metric_regex or metric_json_key",
            "e.g. --metric-regex 'time_us: ([0-9.]+)' or --metric-json-key results.time_us",
        )
    if req.metric_regex is not None:
        compile_metric_regex(req.metric_regex)
    start = time.perf_counter()
    samples, _ = measure_command(
        argv,
        cwd=wd,
        env=instrumentation.stripped(),
        runs=req.runs,
        warmup=req.warmup,
        timeout_s=req.timeout_s,
        regex=req.metric_regex,
        json_key=req.metric_json_key,
        progress=progress,
    )
    note = (
        f"metric read from the command's output ({'regex' if req.metric_regex else 'JSON key'}); "
        f"{req.runs + req.warmup} runs took {time.perf_counter() - start:.2f} s"
    )
    if instr:
        note += f"; stripped from its environment: {', '.join(instr)}"
    env = environment.capture(wd)
    env["clocks_before"] = clocks_before
    return TimeResult(
        mode="command",
        target=shlex.join(argv),
        timer="command_metric",
        timer_note=note,
        unit=req.metric_unit,
        runs=req.runs,
        warmup=req.warmup,
        rotate=1,
        l2_flush_bytes=None,
        verdict_mode="command",
        stats=summarize(samples, req.cv_threshold),
        samples=samples,
        environment=env,
    )
