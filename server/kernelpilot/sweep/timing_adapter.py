"""The one seam between sweeps and `kernelpilot.timing`: how a cell's closure or command is timed.

`time_cell` times a launch closure with `kernelpilot time`'s engine (cold or warm GPU time through torch
when this worker sees a GPU, else the labelled CPU perf_counter fallback); `time_command` reads a command's
printed metric exactly as `eval` does. A candidate cell is timed together with the baseline variant at its
shape: `time_cell_paired` (closures, `kernelpilot compare`'s engine) and `time_command_paired` (commands,
alternated as eval's command path alternates them, `timing.paired.alternate_metrics`). All return the
sweep's own `CellTiming`, so a change of timing internals stays in this file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from kernelpilot.sweep.models import CellTiming, PairedCell

Mode = Literal["cold", "warm"]


def _timing(samples: list[float], method: str, cv_threshold: float, note: str) -> CellTiming:
    from kernelpilot.timing.stats import summarize

    s = summarize(samples, cv_threshold)
    return CellTiming(
        median_us=s.median,
        samples_us=samples,
        cv=s.cv,
        stable=s.stable,
        method=method,
        iqr_us=s.iqr,
        note=note,
    )


def time_cell(
    make_closure: Callable[[], Any],
    *,
    mode: Mode,
    runs: int,
    warmup: int,
    device: str = "auto",
    cv_threshold: float = 0.02,
) -> CellTiming:
    """Median, samples, CV and stability of a launch closure in the sweep's timing mode, by the same engine
    as `kernelpilot time` (launches queued behind a spin hold; cold = L2 flushed before every launch,
    warm = back-to-back launches), or the labelled CPU fallback when this worker sees no GPU."""
    from kernelpilot.timing import callables

    t = callables.time_factory(
        make_closure,
        runs=runs,
        warmup=warmup,
        rotate=1,
        modes=[mode],
        device=device,
        warmup_min_s=0.1,
        kernels=False,
    )
    if t.modes:
        m = t.modes[mode]
        note = f"{m.note}; {t.device_name}"
        return _timing(m.samples_us, m.method, cv_threshold, note)
    assert t.cpu_samples_us is not None
    note = t.cpu_note + ("; cold mode has no L2 to flush here" if mode == "cold" else "")
    return _timing(t.cpu_samples_us, "cpu_perf_counter_ns", cv_threshold, note)


def time_cell_paired(
    baseline: list[Callable[[], Any]],
    candidate: list[Callable[[], Any]],
    *,
    name: str,
    mode: Mode,
    runs: int,
    device: str = "auto",
    cv_threshold: float = 0.02,
    parity: float = 0.02,
) -> CellTiming:
    """The candidate's closures timed together with the baseline's at the same shape (A,B,B,A blocks, NVML
    clock tags; `timing.compare.compare_sides`): the cell's samples are the candidate's, its speed-up the
    per-pair ratio's, so a GPU drifting between cells cannot move a speed-up."""
    from kernelpilot.timing import paired
    from kernelpilot.timing.callables import _cuda_torch
    from kernelpilot.timing.compare import compare_sides
    from kernelpilot.timing.errors import NoGpuWorkError
    from kernelpilot.timing.models import CompareRequest

    torch = None if device == "cpu" else _cuda_torch()
    req = CompareRequest(
        a="baseline", b=name, label_a="baseline", label_b=name, timing=mode, device="auto",
        warmup_min_ms=100.0, max_pairs=max(16, runs // 2), max_wall_s=10.0, target_halfwidth=0.005,
        min_effect=parity,  # judged against the sweep's parity band, as its command cells are
    )  # fmt: skip
    r = compare_sides(paired.Side("baseline", baseline), paired.Side(name, candidate), req, torch)
    if r.ratio_median is None or r.ratio_ci is None:  # a side timed at 0 us or less: no ratio, no score
        raise NoGpuWorkError(
            f"{name} paired with the baseline: {r.verdict_note}",
            "make the timed call do its work on the current stream, and not skip it",
        )
    gpu = r.environment.get("torch_device", "CPU")
    note = f"paired with the baseline ({r.order}, {r.pairs} pairs): {r.timer_note}; {gpu}"
    t = _timing(r.b_samples, r.timer, cv_threshold, note)
    t.paired = PairedCell(
        ratio_median=r.ratio_median, ratio_ci=r.ratio_ci, ratios=r.ratios, pairs=r.pairs,
        baseline_median_us=r.a_stats.median, verdict=r.verdict, clocks_note=r.clocks.note,
        baseline_samples=r.a_samples,
    )  # fmt: skip
    return t


def time_command(
    argv: list[str],
    *,
    cwd: Path,
    runs: int,
    warmup: int,
    timeout_s: float,
    regex: str | None,
    json_key: str | None,
    cv_threshold: float = 0.02,
) -> tuple[CellTiming, str]:
    """Run the command warmup+runs times, reading its printed metric as `eval` does; also its last output."""
    from kernelpilot.timing import instrumentation
    from kernelpilot.timing.core import measure_command

    samples, last_tail = measure_command(
        argv,
        cwd=cwd,
        env=instrumentation.stripped(),
        runs=runs,
        warmup=warmup,
        timeout_s=timeout_s,
        regex=regex,
        json_key=json_key,
    )
    return _timing(samples, "command_metric", cv_threshold, "metric printed by the command"), last_tail


def time_command_paired(
    baseline: list[str],
    candidate: list[str],
    *,
    cwd: Path,
    runs: int,
    warmup: int,
    timeout_s: float,
    metric: tuple[str | None, str | None, str | None, str | None],
    direction: str,
    parity: float,
    cv_threshold: float = 0.02,
) -> tuple[CellTiming, str]:
    """The candidate's command alternated with the baseline variant's at the same shape, in blocks of
    A,B,B,A and B,A,A,B in turn (ceil(runs/2) blocks, at least 2), each side's metric read as `eval` reads
    it; the speed-up and its CI come from the per-block ratio candidate/baseline, as for a factory cell.
    `metric` = (baseline regex, baseline JSON key, candidate regex, candidate JSON key)."""
    import math

    from kernelpilot.timing import clocks, instrumentation, paired
    from kernelpilot.timing.commands import extract_metric, run_command
    from kernelpilot.timing.stats import judge_ratios, summarize

    env = instrumentation.stripped()
    tail = ""

    def measure(side: int) -> float:
        nonlocal tail
        argv, regex, key = (baseline, *metric[:2]) if side == 0 else (candidate, *metric[2:])
        label = "baseline" if side == 0 else "candidate"
        out = run_command(argv, cwd=cwd, env=env, timeout_s=timeout_s, field=f"{label} command")
        if side == 1:
            tail = out.output_tail
        return extract_metric(out.stdout, out.stderr, regex=regex, json_key=key)

    for _ in range(warmup):
        measure(0)
        measure(1)
    source = clocks.open_visible(env)
    sampler = clocks.ClockSampler(source, 0.05)  # command runs last seconds: a reading every 50 ms
    try:
        with sampler:
            blocks = max(2, math.ceil(runs / 2))
            run = paired.alternate_metrics((lambda: measure(0), lambda: measure(1)), blocks)
    finally:
        if source is not None:
            source.close()
    ev = clocks.evidence(sampler, [run.span], clocks.DropLog(), clocks.ThrottlePolicy())
    if not all(math.isfinite(r) and r > 0 for r in run.ratios):
        from kernelpilot.foundation.errors import FormatError

        raise FormatError(
            "a printed metric is <= 0 (or not finite): the paired ratio candidate/baseline is undefined",
            "print a positive metric (a time, or a throughput) from both variants' commands",
        )
    med, lo, hi, verdict = judge_ratios(run.ratios, direction, parity, cv_threshold)
    note = f"metric printed by the command, paired with the baseline ({paired.ORDER}, {blocks} pairs)"
    t = _timing(run.b, "command_metric", cv_threshold, note)
    t.paired = PairedCell(
        ratio_median=med, ratio_ci=[lo, hi], ratios=run.ratios, pairs=len(run.ratios),
        baseline_median_us=summarize(run.a).median,
        verdict=verdict, clocks_note=ev.note,
        baseline_samples=run.a,
    )  # fmt: skip
    return t, tail
