"""Which kernels a launch closure runs, and how long each takes, from the runtime's activity trace.

Why: a closure timed as 140 µs may be one layer-norm kernel or a copy beside it; a kernel engineer must
see which. `torch.profiler` records device activity through CUPTI (NVIDIA) or roctracer (AMD) via
Kineto; its Chrome-trace export is a stable, documented format, so this module reads that file rather
than the profiler's Python event objects (whose attribute names changed across torch releases).
Profiled calls are separate from the timed ones: the tracer adds host overhead, not GPU time.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from kernelpilot.timing.errors import NoGpuWorkError
from kernelpilot.timing.models import KernelAttribution, KernelShare

# Chrome-trace categories Kineto gives device activity (kernels, copies, fills).
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def parse_trace(trace: dict[str, Any], calls: int) -> KernelAttribution:
    """Per-kernel launches and GPU time per call from a Kineto Chrome trace of `calls` closure calls."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    by_name: dict[str, list[float]] = {}
    first: dict[str, float] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") not in DEVICE_CATEGORIES:
            continue
        name = str(ev.get("name", "?"))
        dur = float(ev.get("dur", 0.0) or 0.0)
        by_name.setdefault(name, []).append(dur)
        first.setdefault(name, float(ev.get("ts", 0.0) or 0.0))
    if not by_name:
        raise NoGpuWorkError(
            f"the closure launched no GPU work in {calls} profiled calls (no kernel, copy or fill in the "
            "activity trace)",
            "return a closure that launches the kernel on the GPU (inputs on the device, no early return)",
        )
    total = sum(sum(v) for v in by_name.values())
    shares = [
        KernelShare(
            name=name,
            launches_per_call=len(durs) / calls,
            duration_us_per_call=sum(durs) / calls,
            median_launch_us=sorted(durs)[len(durs) // 2],
            share=(sum(durs) / total) if total > 0 else 0.0,
        )
        for name, durs in by_name.items()
    ]
    shares.sort(key=lambda s: (-s.duration_us_per_call, first[s.name]))
    return KernelAttribution(
        calls_profiled=calls,
        kernels=shares,
        kernel_sum_us_per_call=total / calls,
        source="torch.profiler activity trace (CUPTI on NVIDIA, roctracer on AMD), Chrome-trace export",
    )


def traced(torch: Any, work: Callable[[], Any], cpu: bool = True) -> dict[str, Any]:
    """The Chrome trace of `work()` (then a synchronize) under torch.profiler."""
    profiler = torch.profiler
    activities = [profiler.ProfilerActivity.CUDA]
    if cpu:
        activities.insert(0, profiler.ProfilerActivity.CPU)
    torch.cuda.synchronize()
    with profiler.profile(activities=activities) as prof:
        work()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json", prefix="kernelpilot-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            trace: dict[str, Any] = json.load(fh)
    finally:
        os.unlink(path)
    return trace


def device_events(trace: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, start µs, duration µs) of every kernel, copy and fill in a trace, in start order."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    out = [
        (str(ev.get("name", "?")), float(ev.get("ts", 0.0) or 0.0), float(ev.get("dur", 0.0) or 0.0))
        for ev in events
        if isinstance(ev, dict) and ev.get("ph") == "X" and ev.get("cat") in DEVICE_CATEGORIES
    ]
    out.sort(key=lambda e: e[1])
    return out


def attribute(torch: Any, closures: Sequence[Callable[[], Any]], calls: int = 10) -> KernelAttribution:
    """Profile `calls` calls of the closures (warm, no flush) and attribute GPU time to each kernel."""
    k = len(closures)

    def work() -> None:
        for i in range(calls):
            closures[i % k]()

    return parse_trace(traced(torch, work), calls)
