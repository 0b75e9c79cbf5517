"""Timing a Python launch closure: CUDA events through torch when a GPU is present, else a CPU clock.

The protocol (what `kernelpilot time module:function` expects):

- The spec is `module:function` (an importable module, the current directory on `sys.path`) or
  `path/to/file.py:function`. `function` is a *factory*: it builds inputs once and returns the
  zero-argument launch closure, e.g. `def make(): x = torch.randn(...); return lambda: kernel(x)`.
- Input rotation: if the factory accepts a `rotate` keyword it is called as `factory(rotate=K)`
  and should return K closures, each over its own input set; a factory that returns a list or
  tuple of closures is rotated through whatever its arguments. Run i calls closure i mod K, so a
  cache-resident input does not flatter the kernel.
- GPU path (torch with CUDA): `warmup` untimed calls, then for each of `runs` runs: optional L2
  flush (writing then reading a buffer of 2 x `torch.cuda.get_device_properties().L2_cache_size`
  bytes, outside the timed region, so the L2 holds no data of the kernel and no dirty lines), start
  event, closure, end event, all on the current stream with no synchronize between warm-up and the
  timed runs. One synchronize at the end; each sample is `start.elapsed_time(end)` in microseconds.
  The closure must only enqueue work on the current stream. A kernel shorter than the host cost of
  one loop iteration (see bench/timing_overhead.py) is timed with launch gaps: capture a CUDA graph
  in the factory and replay it in the closure, or time it in a command.
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

from kernelpilot.errors import DeviceUnavailableError, InputFileError, InvalidArgumentError, KernelpilotError

L2_FLUSH_FACTOR = 2  # flush buffer = 2 x the device's reported L2 size (torch device properties)


class CallableError(KernelpilotError):
    """The factory or its closure raised; the message holds the Python exception."""

    kind = "callable_failed"


@dataclass
class CallableTiming:
    samples_us: list[float]
    timer: str
    timer_note: str
    rotate: int
    l2_flush_bytes: int | None
    device_name: str | None


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


def build_closures(factory: Callable[..., Any], rotate: int) -> list[Callable[[], Any]]:
    """Call the factory (with `rotate=` when it takes it) and normalise its answer to a closure list."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    try:
        made = factory(rotate=rotate) if "rotate" in params else factory()
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


def time_cuda(
    torch: Any,
    closures: list[Callable[[], Any]],
    runs: int,
    warmup: int,
    l2_flush: bool,
    hold_gpu: Callable[[], Any] | None = None,
    warmup_min_s: float = 0.0,
) -> tuple[list[float], int | None]:
    """CUDA events around each call on the current stream; optional L2 flush outside the events.

    No synchronize between warm-up and the timed runs: the launch queue stays full, so the first
    timed run does not absorb host launch latency. `hold_gpu` (benchmarks) enqueues GPU work, e.g.
    a spin kernel, before the timed runs so that the whole loop is queued before the GPU reaches it.
    """
    k = len(closures)
    stream = torch.cuda.current_stream()
    flush: Callable[[], Any] | None = None
    flush_bytes = None
    if l2_flush:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        if l2 <= 0:
            raise DeviceUnavailableError(
                "torch does not report this GPU's L2 size, so the flush buffer cannot be sized",
                "time without --l2-flush, or upgrade torch",
            )
        flush_bytes = L2_FLUSH_FACTOR * l2
        buf = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")

        def flush() -> None:
            # Write the buffer, then read it back: a write-only flush leaves the L2 full of dirty lines
            # whose write-back the timed kernel then pays (seen on an H100: +2.7 % against ncu's
            # gpu__time_duration, which starts each kernel from a clean L2).
            buf.zero_()
            buf.max()

    torch.cuda.synchronize()
    # Warm up for `warmup` calls and at least `warmup_min_s` of wall time: an idle GPU starts at low clocks.
    # Synchronizing every few calls keeps the host clock in step with the GPU during the warm-up only.
    deadline = time.perf_counter() + warmup_min_s
    i = 0
    while i < warmup or time.perf_counter() < deadline:
        if flush is not None:
            flush()
        closures[i % k]()
        i += 1
        if i % 8 == 0 and time.perf_counter() < deadline:
            torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    order = [closures[i % k] for i in range(runs)]
    if hold_gpu is not None:
        hold_gpu()
    for i, fn in enumerate(order):
        if flush is not None:
            flush()
        starts[i].record(stream)
        fn()
        ends[i].record(stream)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)], flush_bytes


def time_callable(
    spec: str,
    *,
    cwd: Path,
    runs: int,
    warmup: int,
    rotate: int,
    l2_flush: bool,
    device: str,
    warmup_min_s: float = 0.0,
) -> CallableTiming:
    factory = load_factory(spec, cwd)
    torch = None if device == "cpu" else _cuda_torch()
    if device == "cuda" and torch is None:
        raise DeviceUnavailableError(
            "device='cuda' asked for but torch with a CUDA GPU is not available",
            "run on a GPU machine, or use --device cpu / auto for the labelled CPU fallback",
        )
    closures = build_closures(factory, rotate)
    try:
        if torch is not None:
            samples, flush_bytes = time_cuda(
                torch, closures, runs, warmup, l2_flush, warmup_min_s=warmup_min_s
            )
            return CallableTiming(
                samples,
                "cuda_event",
                "GPU time between CUDA events recorded around each launch on the current stream",
                len(closures),
                flush_bytes,
                str(torch.cuda.get_device_name()),
            )
        samples = time_cpu(closures, runs, warmup)
    except KernelpilotError:
        raise
    except Exception as exc:
        raise CallableError(
            f"the timed closure raised {type(exc).__name__}: {exc}", "fix the closure"
        ) from exc
    note = "CPU FALLBACK: host wall time (time.perf_counter_ns) around each call; no GPU timing"
    if l2_flush:
        note += "; --l2-flush ignored (no GPU)"
    return CallableTiming(samples, "cpu_perf_counter_ns", note, len(closures), None, None)
