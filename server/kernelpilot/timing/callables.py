"""Timing a Python launch closure: CUDA events through torch when a GPU is present, else a CPU clock.

The protocol (what `kernelpilot time module:function` expects):

- The spec is `module:function` (an importable module, the current directory on `sys.path`) or
  `path/to/file.py:function`. `function` is a *factory*: it builds inputs once and returns the
  zero-argument launch closure, e.g. `def make(): x = torch.randn(...); return lambda: kernel(x)`.
- Input rotation: if the factory accepts a `rotate` keyword it is called as `factory(rotate=K)`
  and should return K closures, each over its own input set; a factory that returns a list or
  tuple of closures is rotated through whatever its arguments. Run i calls closure i mod K, so a
  cache-resident input does not flatter the kernel.
- GPU path (torch with CUDA or ROCm): `warmup` untimed calls (and at least `warmup_min_s` of wall
  time, so clocks ramp up), then each requested mode is timed by `kernelpilot.timing.gpu` with every
  timed launch already queued behind a spin hold: `cold` flushes the L2 before each launch (outside the
  events), `warm` times back-to-back launches (a replayed graph when the closure can be captured). Then
  10 more calls under `torch.profiler` attribute the GPU time to each kernel the closure launches.
  The closure must only enqueue work on the current stream (no synchronize, no host read-back).
- CPU fallback (no torch/CUDA, or device="cpu"): `time.perf_counter_ns()` around each call,
  labelled `cpu_perf_counter_ns` in the result: it is host wall time, not GPU time.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import (
    DeviceUnavailableError,
    InputFileError,
    InvalidArgumentError,
    KernelpilotError,
)
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.timing.errors import CallableError

__all__ = ["CallableError", "CallableTiming", "build_closures", "load_factory", "time_callable", "time_cpu"]


@dataclass
class CallableTiming:
    """What `time_callable` measured: per-mode timings (GPU) or CPU samples, and the kernel attribution."""

    modes: dict[str, Any]  # "cold"/"warm" -> gpu.ModeTiming (GPU path only)
    cpu_samples_us: list[float] | None
    cpu_note: str
    rotate: int
    l2_flush_bytes: int | None
    device_name: str | None
    event_floor_us: float | None = None
    attribution: Any | None = None  # models.KernelAttribution
    observation: Any | None = None  # guard.models.Observation (observe=True)


def load_factory(spec: str, cwd: Path) -> Callable[..., Any]:
    """Resolve `module:function` or `path/to/file.py:function` to the factory function."""
    module_part, sep, func_name = spec.rpartition(":")
    if not sep or not module_part or not func_name:
        raise InvalidArgumentError(
            f"callable spec {spec!r} must be 'module:function' or 'path/to/file.py:function'",
            "name the factory that returns the launch closure",
        )
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part)
        if not path.is_absolute():
            path = cwd / path
        if not path.is_file():
            raise InputFileError(
                f"callable file {module_part!r} not found", "check the path (relative to workdir)"
            )
        mod_name = f"_kernelpilot_timed_{abs(hash(str(path.resolve())))}"
        mspec = importlib.util.spec_from_file_location(mod_name, path)
        if mspec is None or mspec.loader is None:
            raise InputFileError(f"cannot load {module_part!r} as a Python module", "give a .py file")
        module = importlib.util.module_from_spec(mspec)
        sys.path.insert(0, str(path.parent))
        try:
            sys.modules[mod_name] = module
            mspec.loader.exec_module(module)
        except Exception as exc:  # the user's module raised on import: report it, typed
            raise CallableError(
                f"importing {module_part!r} raised {type(exc).__name__}: {exc}", "fix the module"
            ) from exc
        finally:
            sys.path.remove(str(path.parent))
    else:
        if str(cwd) not in sys.path:
            sys.path.insert(0, str(cwd))
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            raise InputFileError(
                f"module {module_part!r} not found: {exc}", "check the name and workdir"
            ) from exc
        except Exception as exc:
            raise CallableError(
                f"importing {module_part!r} raised {type(exc).__name__}: {exc}", "fix the module"
            ) from exc
    fn = getattr(module, func_name, None)
    if fn is None or not callable(fn):
        raise InvalidArgumentError(
            f"{module_part!r} has no callable {func_name!r}", "check the function name"
        )
    return fn  # type: ignore[no-any-return]


def build_closures(
    factory: Callable[..., Any], rotate: int, kwargs: dict[str, Any] | None = None
) -> list[Callable[[], Any]]:
    """Call the factory (with `rotate=` when it takes it) and normalise its answer to a closure list."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    try:
        extra = dict(kwargs or {})
        made = factory(rotate=rotate, **extra) if "rotate" in params else factory(**extra)
    except Exception as exc:
        raise CallableError(f"the factory raised {type(exc).__name__}: {exc}", "fix the factory") from exc
    closures = list(made) if isinstance(made, (list, tuple)) else [made]
    if not closures or not all(callable(c) for c in closures):
        raise InvalidArgumentError(
            "the factory must return a zero-argument closure or a list of them",
            "return e.g. `lambda: kernel(x)` (see `kernelpilot time --help`)",
        )
    return closures


def _cuda_torch() -> Any | None:
    if importlib.util.find_spec("torch") is None:
        return None
    torch: Any = importlib.import_module("torch")  # heavy: imported only when timing on a GPU
    return torch if torch.cuda.is_available() else None


def time_cpu(closures: list[Callable[[], Any]], runs: int, warmup: int) -> list[float]:
    """perf_counter_ns around each call; the loop keeps its own cost to a few hundred ns."""
    k = len(closures)
    order = [closures[i % k] for i in range(runs)]
    for i in range(warmup):
        closures[i % k]()
    samples_ns = [0] * runs
    clock = time.perf_counter_ns
    for i, fn in enumerate(order):
        t0 = clock()
        fn()
        samples_ns[i] = clock() - t0
    return [ns / 1000.0 for ns in samples_ns]


def time_callable(
    spec: str, *, cwd: Path, observe: bool = False, observe_trace: bool = True, **options: Any
) -> CallableTiming:
    """Load the factory `spec` names (relative to `cwd`) and time it: see `time_factory` for the options.

    With `observe`, a `guard.observe.Watch` starts before the module is imported (so a timer it replaces
    on import is seen) and the closures are observed after the timing.
    """
    watch = None
    if observe:
        from kernelpilot.guard.observe import Watch

        watch = Watch(import_torch=options.get("device") != "cpu")
        watch.trace_device = observe_trace
    from kernelpilot.guard.errors import GuardFindingsError

    try:
        return time_factory(load_factory(spec, cwd), watch=watch, **options)
    except GuardFindingsError:
        raise
    except KernelpilotError as exc:
        if watch is not None and (watch.replaced() or watch.started):
            raise GuardFindingsError.of(
                watch.findings(), f"and the timing then failed: {exc.message}"
            ) from exc
        raise


def _observe(torch: Any, closures: list[Callable[[], Any]], watch: Any) -> Any:
    from kernelpilot.guard import observe

    if torch is None or not watch.trace_device:
        why = "no torch with a GPU: no activity trace to observe (CPU timing)" if torch is None else ""
        obs = observe.unobserved(why or "activity trace off in this run (observe_trace=False)", watch)
        observe.sampled(obs, closures)
    else:
        try:
            obs = observe.with_findings(observe.observe(torch, closures, watch=watch), watch)
        except KernelpilotError:
            raise
        except Exception as exc:
            from kernelpilot.timing import gpu

            raise gpu.wrap_device_error(exc, "guard observation") from exc
    return obs


def time_factory(
    factory: Callable[..., Any],
    *,
    runs: int,
    warmup: int,
    rotate: int,
    modes: list[Any],
    device: str,
    warmup_min_s: float = 0.0,
    kernels: bool = True,
    graph: bool = True,
    factory_kwargs: dict[str, Any] | None = None,
    progress: Progress = no_progress,
    cold_timer: Any = "auto",
    watch: Any | None = None,
) -> CallableTiming:
    """Time an already-loaded factory (sweeps call this with the shape's fields as `factory_kwargs`)."""
    torch = None if device == "cpu" else _cuda_torch()
    if device == "cuda" and torch is None:
        raise DeviceUnavailableError(
            "device='cuda' asked for but torch with a GPU (CUDA or ROCm) is not available",
            "run on a GPU machine, or use --device cpu / auto for the labelled CPU fallback",
        )
    closures = build_closures(factory, rotate, factory_kwargs)
    if watch is not None and (watch.replaced() or watch.started):
        # a timer replaced or a thread started while the closures were built: timing them would only
        # measure the hack (a replaced event timer can even keep the hold calibration from ending)
        from kernelpilot.guard.errors import GuardFindingsError

        raise GuardFindingsError.of(watch.findings(), "seen before the timing started; nothing was timed")
    if torch is not None:
        from kernelpilot.timing import gpu

        timings, floor, _ = gpu.time_modes(
            torch,
            closures,
            modes=modes,
            runs=runs,
            warmup=warmup,
            warmup_min_s=warmup_min_s,
            use_graph=graph,
            progress=progress,
            cold_timer=cold_timer,
        )
        attribution = None
        if kernels:
            from kernelpilot.timing.kernels import attribute

            try:
                attribution = attribute(torch, closures)
            except KernelpilotError:
                raise
            except Exception as exc:
                raise gpu.wrap_device_error(exc, "kernel attribution") from exc
        cold = timings.get("cold")
        observation = _observe(torch, closures, watch) if watch is not None else None
        return CallableTiming(
            modes=dict(timings),
            cpu_samples_us=None,
            cpu_note="",
            rotate=len(closures),
            l2_flush_bytes=cold.l2_flush_bytes if cold is not None else None,
            device_name=str(torch.cuda.get_device_name()),
            event_floor_us=floor,
            attribution=attribution,
            observation=observation,
        )
    try:
        samples = time_cpu(closures, runs, warmup)
    except KernelpilotError:
        raise
    except Exception as exc:
        raise CallableError(
            f"the timed closure raised {type(exc).__name__}: {exc}", "fix the closure"
        ) from exc
    note = "CPU FALLBACK: host wall time (time.perf_counter_ns) around each call; no GPU timing"
    observation = _observe(None, closures, watch) if watch is not None else None
    return CallableTiming({}, samples, note, len(closures), None, None, observation=observation)
