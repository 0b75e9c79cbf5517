"""The `time_kernel` capability: one function from TimeRequest to TimeResult."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Literal

from kernelpilot.capability import Progress, no_progress
from kernelpilot.errors import InputFileError, InvalidArgumentError
from kernelpilot.timing import environment, instrumentation
from kernelpilot.timing.callables import time_callable
from kernelpilot.timing.commands import check_argv, compile_metric_regex, extract_metric, run_command
from kernelpilot.timing.models import TimeRequest, TimeResult
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


def time_kernel(req: TimeRequest, progress: Progress = no_progress) -> TimeResult:
    if (req.spec is None) == (req.command is None):
        raise InvalidArgumentError(
            "give exactly one of spec (module:function) or command (argv list)",
            "e.g. `kernelpilot time kern.py:make` or `kernelpilot time --command python --command b.py "
            "--metric-regex 'us=([0-9.]+)'`",
        )
    wd = _workdir(req.workdir)
    clocks_before = environment.query_gpus()
    instr = instrumentation.present()
    if req.spec is not None:
        if req.metric_regex or req.metric_json_key:
            raise InvalidArgumentError("metric_regex/metric_json_key apply to command only", "drop them")
        t = time_callable(
            req.spec,
            cwd=wd,
            runs=req.runs,
            warmup=req.warmup,
            rotate=req.rotate,
            l2_flush=req.l2_flush,
            device=req.device,
            warmup_min_s=req.warmup_min_ms / 1000.0,
        )
        samples, timer, note, unit = t.samples_us, t.timer, t.timer_note, "us"
        if instr:
            note += f"; WARNING: instrumentation variables set in this process: {', '.join(instr)}"
        rotate, flush = t.rotate, t.l2_flush_bytes
        mode: Literal["callable", "command"] = "callable"
        target = req.spec
        extra = {"torch_device": t.device_name} if t.device_name else {}
    else:
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
        timer, unit, rotate, flush, mode = "command_metric", req.metric_unit, 1, None, "command"
        note = (
            f"metric read from the command's output ({'regex' if req.metric_regex else 'JSON key'}); "
            f"{req.runs + req.warmup} runs took {time.perf_counter() - start:.2f} s"
        )
        if instr:
            note += f"; stripped from its environment: {', '.join(instr)}"
        target = shlex.join(argv)
        extra = {}
    env = environment.capture(wd)
    env["clocks_before"] = clocks_before
    env.update(extra)
    return TimeResult(
        mode=mode,
        target=target,
        timer=timer,
        timer_note=note,
        unit=unit,
        runs=req.runs,
        warmup=req.warmup,
        rotate=rotate,
        l2_flush_bytes=flush,
        stats=summarize(samples, req.cv_threshold),
        samples=samples,
        environment=env,
    )
