"""The child process that runs a step closure in steady state and records it (`python -m ...runner`).

Why a child process: the user's code, its CUDA context and the profiler run apart from kernelpilot (a crash
or a hang kills only the child; `toolchain.run` bounds it), and the child lists the code objects it loaded
(`workload.join.loaded_code_objects`) before it exits. The closure protocol is `kernelpilot time`'s
(`timing.callables`): a factory that builds inputs once and returns a zero-argument step closure.

What it does: warm-up (at least `--warmup` steps and 0.5 s), then CUDA-event timing of N steps without the
tracer, then N steps under `torch.profiler` (CPU + CUDA activity: CUPTI on NVIDIA, roctracer on AMD), each
step inside a `record_function("kernelpilot.step#<i>")` range and every `nn.Module` forward inside a
`record_function("nn.Module: <Class>")` range, exported as Chrome-trace JSON; then the GPU code objects the
process has mapped and the device's ISA name go to meta.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEP_RANGE = "kernelpilot.step#"
MODULE_RANGE = "nn.Module: "
EXIT_NO_GPU = 3  # no torch, or torch without a GPU: capture.py turns this into DeviceUnavailableError
EXIT_USER = 4  # the factory or closure raised: capture.py turns this into CallableError


def _module_ranges(torch: Any) -> Callable[[], None]:
    """Global forward hooks that open a profiler range per nn.Module call; returns the remover."""
    stack: list[Any] = []

    def pre(module: Any, _args: Any) -> None:
        rf = torch.profiler.record_function(MODULE_RANGE + type(module).__name__)
        rf.__enter__()
        stack.append(rf)

    def post(_module: Any, _args: Any, _out: Any) -> None:
        if stack:
            stack.pop().__exit__(None, None, None)

    hooks = torch.nn.modules.module
    h1 = hooks.register_module_forward_pre_hook(pre)
    h2 = hooks.register_module_forward_hook(post)

    def remove() -> None:
        h1.remove()
        h2.remove()

    return remove


def _warm(torch: Any, step: Callable[[], Any], steps: int, min_s: float) -> None:
    """`steps` untimed steps, and more until `min_s` of wall time has passed, so an idle GPU's clocks have
    ramped up before anything is measured (as `kernelpilot time`'s warmup_min_ms)."""
    t0 = time.perf_counter()
    done = 0
    while done < steps or time.perf_counter() - t0 < min_s:
        step()
        done += 1
        if done % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def _event_times(torch: Any, step: Callable[[], Any], steps: int) -> list[float]:
    """Per-step device time (µs) from CUDA events around each step, no tracer attached."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(steps)]
    torch.cuda.synchronize()
    for i in range(steps):
        starts[i].record()
        step()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)]


def _trace(torch: Any, step: Callable[[], Any], steps: int, path: Path) -> None:
    profiler = torch.profiler
    acts = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
    remove = _module_ranges(torch)
    try:
        torch.cuda.synchronize()
        with profiler.profile(activities=acts, record_shapes=True) as prof:
            for i in range(steps):
                with profiler.record_function(f"{STEP_RANGE}{i}"):
                    step()
            torch.cuda.synchronize()
    finally:
        remove()
    prof.export_chrome_trace(str(path))


def _arch(torch: Any) -> str:
    """The device's ISA name as the join reads code objects: sm_<major><minor> or the gfx target."""
    if getattr(torch.version, "hip", None):  # CUDA builds have gcnArchName too, holding the device name
        return str(torch.cuda.get_device_properties(0).gcnArchName).split(":")[0]
    major, minor = torch.cuda.get_device_capability(0)
    return f"sm_{major}{minor}"


def _code_objects() -> dict[str, Any]:
    """The GPU code objects this process has mapped (workload/join.py), listed while they still are."""
    from kernelpilot.foundation.errors import KernelpilotError
    from kernelpilot.workload.join import loaded_code_objects

    try:
        return {"code_objects": [str(p) for p in loaded_code_objects()]}
    except KernelpilotError as exc:
        return {"code_objects": [], "code_objects_error": str(exc)}


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m kernelpilot.workload.runner")
    ap.add_argument("spec", help="factory spec, 'file.py:function' or 'module:function'")
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--warmup-min-s", type=float, default=0.5, help="keep warming up this long (clock ramp)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", default=".", help="folder for trace.json and meta.json")
    ap.add_argument("--kwargs", default="{}", help="JSON object passed to the factory")
    return ap.parse_args(argv)


def torch_with_gpu(program: str) -> Any | None:
    """torch, when it is installed and sees a GPU; else None, with why on stderr (the child then exits
    EXIT_NO_GPU, which its parent turns into DeviceUnavailableError)."""
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]  # the child exists to run torch
    except ImportError:
        print(f"{program}: torch is not installed in this Python", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print(f"{program}: torch sees no GPU (CUDA or ROCm)", file=sys.stderr)
        return None
    return torch


def main(argv: list[str] | None = None) -> int:
    """Run the capture; exit codes EXIT_NO_GPU / EXIT_USER say which typed error the parent raises."""
    a = _args(argv)
    torch = torch_with_gpu("kernelpilot-runner")
    if torch is None:
        return EXIT_NO_GPU

    from kernelpilot.foundation.errors import KernelpilotError
    from kernelpilot.timing.callables import build_closures, load_factory

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        closures = build_closures(load_factory(a.spec, Path(a.workdir)), 1, json.loads(a.kwargs))
        step = closures[0]
        _warm(torch, step, a.warmup, a.warmup_min_s)
        event_us = _event_times(torch, step, a.steps)
        _trace(torch, step, a.steps, out / "trace.json")
    except KernelpilotError as exc:
        print(f"kernelpilot-runner: {exc}", file=sys.stderr)
        return EXIT_USER
    except Exception as exc:  # the user's closure raised: the parent reports it as CallableError
        print(f"kernelpilot-runner: the step raised {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USER
    meta_objects = _code_objects()
    meta = {
        "pid": os.getpid(),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "hip": getattr(torch.version, "hip", None),
        "cuda": getattr(torch.version, "cuda", None),
        "warmup": a.warmup,
        "steps": a.steps,
        "event_step_us": event_us,
        "event_step_median_us": statistics.median(event_us),
        "arch": _arch(torch),
        **meta_objects,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
