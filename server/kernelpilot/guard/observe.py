"""Watching the timed closure from outside its code: replaced timers, started threads, all-stream work.

Why: a closure timed by events on the current stream can hide its work on another stream, in a thread,
or behind a patched timer (docs/eval-design.md, "The seam between the two halves"). `Watch` is created
before the candidate's module is imported and snapshots the timing functions kernelpilot relies on (by
identity) and wraps the thread-start primitives (`threading`'s and `_thread`'s); `observe`
re-times calls of the closures with a device-wide synchronize and, when that cannot settle it or a thread
was started, traces them with torch.profiler (CUPTI/roctracer record device activity on every stream, and
the runtime/driver call that launched it with its thread); `judge` compares that with the timed figure.

Threads are judged by what they do (docs/guard.md, "Threads"): one whose target is the candidate's own
code is rejected when it starts; one running library code (tqdm's monitor under torch.compile, compile
workers, autotuners) is harmless unless the trace sees it launch device work, which it then attributes.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import importlib
import importlib.util
import math
import os
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kernelpilot.guard.models import (
    ForeignLaunch,
    KernelSeen,
    Observation,
    Rejection,
    ThreadSeen,
    Tolerance,
)

# (module, attribute path) of every function a kernelpilot timing result depends on.
TIMERS: tuple[tuple[str, str], ...] = (
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "time"),
    ("time", "time_ns"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda", "current_stream"),
    ("torch.cuda", "Event"),
    ("torch.cuda", "Event.record"),
    ("torch.cuda", "Event.elapsed_time"),
    ("torch.cuda", "Event.synchronize"),
    ("torch.cuda", "Event.query"),
    ("torch.cuda", "Stream.synchronize"),
    ("torch.cuda", "Stream.wait_stream"),
    ("torch.cuda", "graph"),
    ("torch.cuda", "CUDAGraph.replay"),
    ("torch.profiler", "profile"),
    # the public ops a baseline (or the contract's reference) calls: replaced, they could slow the baseline
    # side sharing the timing process, or skew the checked references (torch.compile replaces none)
    ("torch", "matmul"),
    ("torch", "mm"),
    ("torch", "bmm"),
    ("torch", "addmm"),
    ("torch", "add"),
    ("torch", "mul"),
    ("torch", "Tensor.__matmul__"),
    ("torch", "Tensor.__add__"),
    ("torch", "Tensor.__mul__"),
    ("torch", "Tensor.matmul"),
    ("torch", "Tensor.add"),
    ("torch", "Tensor.mul"),
    # the summary statistics a harness takes of its samples (GPU MODE #162's statistics patch)
    ("statistics", "median"),
    ("statistics", "mean"),
    ("statistics", "fmean"),
    ("numpy", "median"),
    ("numpy", "mean"),
    ("numpy", "percentile"),
    ("numpy", "quantile"),
)
# every public function of torch.nn.functional is snapshotted too (`_functional`)
FUNCTIONAL = "torch.nn.functional"
# kernelpilot's own timing modules: every function they define is snapshotted too. The paired loop and
# the guard's timing factory are among them: `guard.checked` runs the candidate's checks before it loads
# the timed sides, so a candidate that replaced `guard.timed.make` there would choose what is timed.
OWN_MODULES = (
    "kernelpilot.timing.gpu",
    "kernelpilot.timing.stats",
    "kernelpilot.timing.callables",
    "kernelpilot.timing.kernels",
    "kernelpilot.timing.paired",
    "kernelpilot.timing.compare",
    "kernelpilot.guard.timed",
    "kernelpilot.guard.contract",
    "kernelpilot.guard.observe",
)
# kernelpilot's own threads, not recorded: the NVML clock sampler (timing.clocks.ClockSampler, which runs
# while the sides are timed). Every other thread is recorded and judged (`ThreadSeen.origin`).
ALLOWED_THREAD_MODULES = ("kernelpilot.timing.clocks",)
# Activity-trace categories of the host calls that launch device work (CUPTI runtime and driver API).
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "hip_runtime")
ANNOTATION = "kernelpilot.guard.timed_calls"  # the profiler range around the traced calls (timing thread)
MARKER_CYCLES = 64  # a spin kernel the timing thread launches first in the traced range (~0.05 us)

# Bound when this module loads (before any candidate module): the re-timing uses the real clock even when
# a candidate replaced time.perf_counter (which Watch then reports).
_CLOCK = time.perf_counter

# A timed figure accounts for the traced device work when busy <= timed * (1 + REL) + ABS.
UNACCOUNTED_REL = 0.25
UNACCOUNTED_ABS_US = 2.0


def _resolve(module: str, path: str) -> Any:
    mod = sys.modules.get(module)
    if mod is None:
        return None
    obj: Any = mod
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _own_functions() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in OWN_MODULES:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        for attr, value in vars(mod).items():
            if callable(value) and getattr(value, "__module__", None) == name:
                out[f"{name}.{attr}"] = value
    return out


def _functional() -> dict[str, Any]:
    """torch.nn.functional's public callables by name (what F.* a baseline or a reference calls)."""
    mod = sys.modules.get(FUNCTIONAL)
    if mod is None:
        return {}
    return {f"{FUNCTIONAL}.{k}": v for k, v in vars(mod).items() if callable(v) and not k.startswith("_")}


def thread_names(threads: list[ThreadSeen]) -> dict[int, str]:
    """Trace thread id -> the watched thread's name. The activity trace names a launching thread by its
    OS id or by the low 32 bits of its pthread id (CUPTI's threadId), so both key the same name."""
    names: dict[int, str] = {}
    for t in threads:
        for tid in (t.native_id, t.ident, t.ident & 0xFFFFFFFF if t.ident is not None else None):
            if tid is not None:
                names[tid] = t.name
    return names


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the candidate's: the standard library, installed packages, kernelpilot."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    roots |= {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the kernelpilot package
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def _code_file(fn: Any) -> str | None:
    """The source file of a thread's target, through partials, bound methods and decorators; None for a
    builtin (which runs no Python code of its own)."""
    for _ in range(8):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif getattr(fn, "__func__", None) is not None:
            fn = fn.__func__
        elif getattr(fn, "__wrapped__", None) is not None:
            fn = fn.__wrapped__
        else:
            break
    code = getattr(fn, "__code__", None)
    return str(code.co_filename) if code is not None else None


def origin_of(fn: Any, roots: tuple[str, ...]) -> str:
    """'library' when `fn` is a builtin or defined under `roots`, else 'candidate' (incl. exec'd code)."""
    file = _code_file(fn)
    if file is None:
        return "library"
    return "library" if os.path.realpath(file).startswith(roots) else "candidate"


class Watch:
    """Snapshot of the timing functions and thread-start hooks; `findings()` says what changed since.

    Watches nest (`guard.checked`'s runs on while `time_compare` may start none): a second watch wraps
    the first one's hooks and restores them when it ends."""

    def __init__(self, import_torch: bool = True) -> None:
        if import_torch and "torch" not in sys.modules and importlib.util.find_spec("torch") is not None:
            importlib.import_module("torch")  # so torch's timers exist to snapshot before the candidate
        for name in (*OWN_MODULES, "statistics"):  # these exist to snapshot before the candidate
            importlib.import_module(name)
        self.timers = {f"{m}.{p}": _resolve(m, p) for m, p in TIMERS}
        self.functional = _functional()
        self.own = _own_functions()
        self.roots = _library_roots()
        self.started: list[str] = []  # threads running the candidate's own code: rejected
        self.threads: list[ThreadSeen] = []  # every thread started while watched
        self.trace_device = True  # whether the timing process also takes the activity trace
        self.ended = False  # findings() was called: the thread-start hooks are gone
        # The thread-start primitives, wrapped: `threading`'s own (every Thread.start calls it, so the
        # thread is recorded by the thread that starts it, before it runs) and the low-level `_thread` API.
        self._hooks: dict[tuple[Any, str], tuple[Any, Any]] = {}
        for mod, name in ((threading, "_start_new_thread"), (threading, "_start_joinable_thread"),
                          (_thread, "start_new_thread"), (_thread, "start_joinable_thread")):  # fmt: skip
            raw = getattr(mod, name, None)
            if raw is None:
                continue
            hook = self._starter(raw, "threading" if mod is threading else "_thread")
            self._hooks[(mod, name)] = (raw, hook)
            setattr(mod, name, hook)

    def _record(self, name: str, target: Any, via: str) -> ThreadSeen:
        where = getattr(target, "__module__", None) or "?"
        what = getattr(target, "__qualname__", type(target).__qualname__)
        seen = ThreadSeen(
            name=name, runs=f"{where}.{what}", origin=origin_of(target, self.roots), via=via
        )  # fmt: skip
        self.threads.append(seen)
        if seen.origin == "candidate":
            self.started.append(f"{name} (runs {seen.runs})")
        return seen

    def _starter(self, raw: Any, via: str) -> Callable[..., Any]:
        """A thread-start primitive that records the thread (its target, whose code it is) first."""

        def start(function: Any, *args: Any, **kwargs: Any) -> Any:
            if self.ended:
                return raw(function, *args, **kwargs)
            thread = getattr(function, "__self__", None)
            if isinstance(thread, threading.Thread):  # Thread.start: its target (or its class's run)
                target = getattr(thread, "_target", None) or type(thread).run
                if (getattr(target, "__module__", None) or "").startswith(ALLOWED_THREAD_MODULES):
                    return raw(function, *args, **kwargs)
                seen = self._record(thread.name, target, "threading")
            else:
                seen = self._record(f"_thread {getattr(function, '__qualname__', '?')}", function, via)

            def run(*a: Any, **k: Any) -> Any:
                seen.native_id, seen.ident = threading.get_native_id(), threading.get_ident()
                return function(*a, **k)

            return raw(run, *args, **kwargs)

        return start

    def hooks(self) -> list[str]:
        """Interpreter hooks running the candidate's own code: `sys.settrace`/`setprofile` (this thread's
        and `threading`'s for new threads) and `sys.monitoring` callbacks (Python 3.12+). Such a hook runs
        inside the timing loop's own frames without replacing any function (a callback on the return of
        `Event.record` can launch the deferred work right after the end event). A library's hook (a
        debugger, coverage, a profiler) is not reported."""
        found = []
        for what, fn in (
            ("sys.settrace", sys.gettrace()),
            ("sys.setprofile", sys.getprofile()),
            ("threading.settrace", getattr(threading, "_trace_hook", None)),
            ("threading.setprofile", getattr(threading, "_profile_hook", None)),
        ):
            if fn is not None and origin_of(fn, self.roots) == "candidate":
                found.append(f"{what} ({getattr(fn, '__qualname__', type(fn).__qualname__)})")
        return found + _monitoring_callbacks(self.roots)

    def library_threads(self) -> list[ThreadSeen]:
        return [t for t in self.threads if t.origin == "library"]

    def replaced(self) -> list[str]:
        out = [
            name
            for name, before in self.timers.items()
            if before is not None and _resolve(*_split(name)) is not before
        ]
        now = _own_functions()
        out += [name for name, fn in self.own.items() if now.get(name) is not fn]
        now_f = _functional()
        out += [name for name, fn in self.functional.items() if now_f.get(name) is not fn]
        out += [f"{h}: an interpreter hook running the candidate's code" for h in self.hooks()]
        if not self.ended:
            out += [
                f"{mod.__name__}.{name} (the thread-start watch was removed)"
                for (mod, name), (_, hook) in self._hooks.items()
                if getattr(mod, name, None) is not hook
            ]
        return out

    def seen(self) -> list[str]:
        """What `findings` would say, while the watch goes on (`guard.checked` keeps one watch from the
        candidate's first import to the end of its timing)."""
        return [f"replaced: {r}" for r in self.replaced()] + [f"thread started: {t}" for t in self.started]

    def findings(self) -> list[str]:
        """Replaced timing functions and candidate threads started since the watch began (then stops)."""
        seen = self.seen()
        if not self.ended:
            for (mod, name), (raw, hook) in self._hooks.items():
                if getattr(mod, name, None) is hook:
                    setattr(mod, name, raw)
            self.ended = True
        return seen


def _monitoring_callbacks(roots: tuple[str, ...]) -> list[str]:
    """`sys.monitoring` callbacks (every tool, every event) whose code is the candidate's. Reading a
    callback means registering another one (register_callback returns the one it replaced), so each is
    put straight back."""
    mon = getattr(sys, "monitoring", None)
    if mon is None:
        return []
    found = []
    events = [v for k, v in vars(mon.events).items() if k.isupper() and isinstance(v, int) and v]
    for tool in range(6):
        if mon.get_tool(tool) is None:
            continue
        for ev in events:
            try:
                cb = mon.register_callback(tool, ev, None)
                mon.register_callback(tool, ev, cb)
            except ValueError:  # a combined flag (not a single event) is refused: nothing registered
                continue
            if cb is not None and origin_of(cb, roots) == "candidate":
                name = getattr(cb, "__qualname__", type(cb).__qualname__)
                found.append(f"sys.monitoring tool {tool} ({mon.get_tool(tool)}): {name}")
    return sorted(set(found))


def _split(name: str) -> tuple[str, str]:
    for m, p in TIMERS:
        if f"{m}.{p}" == name:
            return m, p
    raise KeyError(name)


def _union_us(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, -float("inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def observation_from_trace(trace: dict[str, Any], calls: int) -> Observation:
    """Device work per call, on every stream, from a torch.profiler Chrome trace of `calls` calls."""
    from kernelpilot.timing.kernels import DEVICE_CATEGORIES

    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    spans: list[tuple[float, float]] = []
    streams: set[int] = set()
    by_name: dict[tuple[str, int | None], float] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") not in DEVICE_CATEGORIES:
            continue
        ts, dur = float(ev.get("ts", 0.0) or 0.0), float(ev.get("dur", 0.0) or 0.0)
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        stream = args.get("stream") if isinstance(args, dict) else None
        sid = int(stream) if isinstance(stream, (int, float)) else None
        if sid is not None:
            streams.add(sid)
        spans.append((ts, ts + dur))
        key = (str(ev.get("name", "?")), sid)
        by_name[key] = by_name.get(key, 0.0) + dur
    seen = sorted(by_name.items(), key=lambda kv: -kv[1])[:12]
    return Observation(
        observed=True,
        calls=calls,
        device_busy_us_per_call=_union_us(spans) / calls,
        kernel_sum_us_per_call=sum(e - s for s, e in spans) / calls,
        streams=sorted(streams),
        kernels=[KernelSeen(name=n, stream=s, duration_us=d / calls) for (n, s), d in seen],
    )


def _args(ev: dict[str, Any]) -> dict[str, Any]:
    args = ev.get("args")
    return args if isinstance(args, dict) else {}


def _launching_tids(events: list[Any]) -> dict[int, int]:
    """correlation id -> thread id of the runtime/driver call that launched it."""
    out: dict[int, int] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("cat") not in LAUNCH_CATEGORIES:
            continue
        args = _args(ev)
        corr, tid = args.get("correlation"), ev.get("tid")
        if isinstance(corr, (int, float)) and isinstance(tid, (int, float)):
            out[int(corr)] = int(tid)
    return out


def _thread_names(events: list[Any], names: dict[int, str]) -> dict[int, str]:
    out = dict(names)
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "thread_name":
            args = _args(ev)
            tid = ev.get("tid")
            if isinstance(tid, (int, float)) and int(tid) not in out and isinstance(args.get("name"), str):
                out[int(tid)] = str(args["name"])
    return out


def launching_threads(trace: dict[str, Any]) -> int:
    """How many threads launched the trace's device work (0: the trace has no launch records)."""
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    return len(set(_launching_tids(events).values()))


def attribute_launches(
    trace: dict[str, Any], timing_tids: set[int], names: dict[int, str] | None = None
) -> tuple[bool, int | None, list[ForeignLaunch]]:
    """(attributed, the timing thread's id, device work launched from other threads) of a torch.profiler
    trace taken with CPU activity (the runtime/driver records carry the launching thread, `tid`, and the
    `correlation` id the kernel/copy/fill records carry too).

    The timing thread is the first of `timing_tids` (its OS id, the id of the annotation around the
    calls) that launched anything; failing that, the one thread that launched everything. Several
    launching threads and none of them known: not attributed (`judge_threads` then refuses to call it
    honest when a thread was started)."""
    from kernelpilot.timing.kernels import DEVICE_CATEGORIES

    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    by_corr = _launching_tids(events)
    device = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") not in DEVICE_CATEGORIES:
            continue
        args = _args(ev)
        corr = args.get("correlation")
        tid = by_corr.get(int(corr)) if isinstance(corr, (int, float)) else None
        stream = args.get("stream")
        device.append(
            (tid, str(ev.get("name", "?")), int(stream) if isinstance(stream, (int, float)) else None)
        )
    launchers = {t for t, _, _ in device if t is not None}
    known = [t for t in timing_tids if t in launchers]
    if known:
        timing: int | None = known[0]
    elif len(launchers) == 1:
        timing = next(iter(launchers))
    else:  # no launch records (nothing to attribute), or several threads and none known
        return False, None, []
    named = _thread_names(events, names or {})
    counts: dict[tuple[int, str, int | None], int] = {}
    for tid, name, stream in device:
        if tid is not None and tid != timing:
            counts[(tid, name, stream)] = counts.get((tid, name, stream), 0) + 1
    foreign = [
        ForeignLaunch(tid=t, thread=named.get(t, f"tid {t}"), kernel=n, launches=c, stream=st)
        for (t, n, st), c in sorted(counts.items(), key=lambda kv: -kv[1])
    ]
    return True, timing, foreign[:12]


def unobserved(why: str, watch: Watch | None) -> Observation:
    obs = Observation(observed=False, why_unobserved=why)
    return with_findings(obs, watch)


def with_findings(obs: Observation, watch: Watch | None) -> Observation:
    if watch is None:
        return obs
    obs.replaced = watch.replaced()
    obs.threads_started = list(watch.started)
    obs.threads = list(watch.threads)
    obs.watch_findings = watch.findings()
    return obs


def observe(
    torch: Any, closures: Sequence[Callable[[], Any]], calls: int = 10, timed_us: float | None = None,
    *, watch: Watch | None = None,
) -> Observation:  # fmt: skip
    """The timed calls' outputs (`sampled`), then `calls` calls re-timed with a device-wide synchronize
    around them and, unless that already settles it, `calls` calls traced on every stream with the thread
    that launched each kernel. Call it right after the timing, before anything else calls the closures.

    Why the synchronized calls first: every device interval of those calls, on any stream, lies between
    the two synchronizes, so their wall time per call bounds the union the trace would measure. When it is
    within what `judge` allows over `timed_us` (the figure the timing reported) and no thread was started
    while watched, the trace could not reject and is skipped (`busy_from="synchronize"`): the profiler's
    start-up costs seconds per process. A started thread always gets the trace: only the trace can say
    whether it launched device work (`judge_threads`).
    """
    from kernelpilot.timing.kernels import traced

    k = len(closures)
    clock = _CLOCK

    def work() -> None:
        for i in range(calls):
            closures[i % k]()

    start = clock()
    obs_out = Observation(observed=False)
    sampled(obs_out, closures)  # first: what the timed calls returned, before these calls replace it
    torch.cuda.synchronize()
    t0 = clock()
    work()
    torch.cuda.synchronize()
    synced = (clock() - t0) * 1e6 / calls
    threads = watch.threads if watch is not None else []
    if timed_us is not None and synced <= allowed_us(timed_us) and not threads:
        obs = Observation(observed=True, calls=calls, device_busy_us_per_call=synced, busy_from="synchronize")
    else:
        record = getattr(getattr(torch, "profiler", None), "record_function", None)
        annotation = record(ANNOTATION) if record is not None else contextlib.nullcontext()

        def annotated() -> None:
            with annotation:
                marker = getattr(torch.cuda, "_sleep", None)
                if marker is not None:  # the timing thread launches at least this, so it is never the
                    marker(MARKER_CYCLES)  # one launcher of a trace whose calls launch from elsewhere
                work()

        trace = traced(torch, annotated, cpu=True)
        obs = observation_from_trace(trace, calls)
        tids = [threading.get_native_id(), *_annotation_tids(trace)]
        names = thread_names(threads)
        obs.attributed, obs.timing_tid, obs.foreign_launches = attribute_launches(trace, set(tids), names)
        obs.launching_threads = launching_threads(trace)
    obs.timed_outputs, obs.timed_checks, obs.fresh_note, obs.fresh_cost = (
        obs_out.timed_outputs, obs_out.timed_checks, obs_out.fresh_note, obs_out.fresh_cost,
    )  # fmt: skip
    obs.synced_us_per_call = synced
    obs.seconds = clock() - start
    return obs


def _annotation_tids(trace: dict[str, Any]) -> list[int]:
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else []
    return [
        int(ev["tid"])
        for ev in events
        if isinstance(ev, dict)
        and ev.get("name") == ANNOTATION
        and ev.get("cat") != "gpu_user_annotation"  # its device copy sits on a stream's row, not a thread's
        and isinstance(ev.get("tid"), (int, float))
    ]


def sampled(obs: Observation, closures: Sequence[Callable[[], Any]]) -> Observation:
    """The timed calls' outputs into `obs`: each sampled call against the reference on the values it saw
    (`guard.timed.TimedCall.checks`), and the last output of each closure (`timed_outputs`)."""
    obs.timed_outputs = timed_outputs(closures)
    checks = [c for fn in closures if hasattr(fn, "checks") for c in fn.checks()]
    obs.timed_checks = checks
    notes = {str(getattr(fn, "fresh_note", "")) for fn in closures} - {""}
    obs.fresh_note = "; ".join(sorted(notes))
    costs = [c for c in (getattr(fn, "cost", None) for fn in closures) if isinstance(c, dict)]
    if costs:
        obs.fresh_cost = {
            "sampled_calls": sum(c["sampled_calls"] for c in costs),
            "fresh_us_per_call": max(c["fresh_us_per_call"] for c in costs),
            "checks_s": sum(c["checks_s"] for c in costs),
            "hooks_host_s": sum(c["hooks_host_s"] for c in costs),
        }
    return obs


def allowed_us(timed_us: float) -> float:
    """The device work per call a timed figure accounts for (`judge`'s rule)."""
    return timed_us * (1 + UNACCOUNTED_REL) + UNACCOUNTED_ABS_US


def timed_outputs(closures: Sequence[Callable[[], Any]]) -> list[list[float | None] | None]:
    """Fingerprints of the last output of each timed closure (`guard.timed.TimedCall`); [] for others."""
    from kernelpilot.guard.backend import fingerprint_of

    if not all(hasattr(c, "last") for c in closures):
        return []
    return [fingerprint_of(getattr(c, "last", None)) for c in closures]


HONEST_OUTPUT = (
    "an honest version computes every call's output from the values that call is given (a cache keyed on "
    "input pointers, shapes or a fingerprint of the values returns what was computed for other values: "
    "the harness writes fresh values into the same buffers between timed calls); reusing one output "
    "buffer, or returning a CUDA graph's static output, is fine"
)


def judge_outputs(obs: Observation, refs: list[list[float]] | None, tol: Tolerance) -> Rejection | None:
    """The timed calls' outputs against the reference on the values each call saw: the sampled calls'
    `timed_checks` (the timing process computed their references) when there are any, else the last
    output of each timed input set against `refs` (`harness` computes them: timings that never wrote
    fresh values)."""
    for c in obs.timed_checks:
        why = c.why or _output_mismatch(c.got, c.ref, tol)
        if why:
            fresh = f" ({obs.fresh_note})" if obs.fresh_note else ""
            return Rejection(
                check="observation",
                status="rejected_timed_output",
                evidence=f"the timed calls returned something else than the checked ones: timed call "
                f"{c.call}, its output sampled right after it returned, against the reference on the values "
                f"it was given{fresh}: {why} (the candidate behaves differently under the timer); "
                + HONEST_OUTPUT,
            )
    if obs.timed_checks or not refs or not obs.timed_outputs:
        return None
    for i, (got, ref) in enumerate(zip(obs.timed_outputs, refs, strict=False)):
        why = _output_mismatch(got, ref, tol)
        if why:
            return Rejection(
                check="observation",
                status="rejected_timed_output",
                evidence=f"the timed calls returned something else than the checked ones: timed input "
                f"set {i}: {why} (the candidate behaves differently under the timer)",
            )
    return None


def _output_mismatch(got: list[float | None] | None, ref: list[float], tol: Tolerance) -> str:
    if got is None:
        return "the timed call returned no array/tensor"
    if len(got) != len(ref) or got[0] != ref[0]:
        count = "?" if got[0] is None else int(got[0])
        return f"{count} elements where the reference has {int(ref[0])}"
    vals = ref[1:]
    rms = math.sqrt(sum(v * v for v in vals) / len(vals)) if vals else 0.0
    atol = tol.atol if tol.atol is not None else tol.rtol * rms
    bad = [
        i
        for i, (g, r) in enumerate(zip(got[1:], vals, strict=True))
        if g is None or not abs(g - r) <= atol + tol.rtol * abs(r)
    ]
    if not bad:
        return ""
    j = bad[0]
    value = "a non-finite value" if got[j + 1] is None else repr(got[j + 1])
    return (
        f"{len(bad)} of {len(vals)} sampled values out of tolerance (e.g. {value} vs reference {vals[j]!r})"
    )


def judge(obs: Observation, timed_us: float) -> Rejection | None:
    """Reject a replaced timer, a candidate's thread, work launched from another thread, or device work
    the timed figure does not account for."""
    return judge_findings(obs) or judge_threads(obs) or judge_escape(obs, timed_us)


def judged(
    obs: Observation, timed_us: float, refs: list[list[float]] | None, tol: Tolerance | None
) -> Rejection | None:
    """The guard's order: what the Watch saw, then the timed outputs, then work that escaped the timer. A
    call that returns something else under the timer (a cached answer) also leaves its traced work outside
    the timed figure; its outputs name the hack, the escape only the symptom."""
    return (
        judge_findings(obs)
        or judge_threads(obs)
        or (judge_outputs(obs, refs, tol) if tol is not None else None)
        or judge_escape(obs, timed_us)
    )


def judge_findings(obs: Observation) -> Rejection | None:
    """Reject a replaced timer or a started thread (what the Watch saw)."""
    if obs.replaced:
        return Rejection(
            check="observation",
            status="rejected_timer_replaced",
            evidence="timing functions replaced after the timing process started: " + ", ".join(obs.replaced),
        )
    if obs.threads_started:
        return Rejection(
            check="observation",
            status="rejected_thread",
            evidence="threads running the candidate's own code started after the timing process began "
            "watching (by the candidate's module or its calls): "
            + ", ".join(obs.threads_started)
            + "; "
            + HONEST_THREAD,
        )
    return None


HONEST_THREAD = (
    "an honest version launches its device work from the calling thread, before it returns (work on "
    "several streams is fine when joined to the calling stream before return); library threads that "
    "launch nothing (torch.compile's, tqdm's monitor, autotuners) are fine"
)


def judge_threads(obs: Observation) -> Rejection | None:
    """Reject device work the trace attributes to a thread other than the timing thread; and, when a
    thread was started and the trace could not say which thread launched what, refuse to call it honest."""
    if obs.foreign_launches:
        shown = ", ".join(
            f"{f.thread} (tid {f.tid}) launched {f.kernel[:60]} x{f.launches} on stream {f.stream}"
            for f in obs.foreign_launches[:4]
        )
        return Rejection(
            check="observation",
            status="rejected_thread",
            evidence=f"device work launched from a thread other than the timing thread (tid "
            f"{obs.timing_tid}) during {obs.calls} traced calls: {shown}; " + HONEST_THREAD,
            numbers={"foreign_launches": float(sum(f.launches for f in obs.foreign_launches))},
        )
    if obs.threads and not obs.attributed and obs.launching_threads > 1:
        return Rejection(
            check="observation",
            status="rejected_thread",
            evidence="threads were started ("
            + ", ".join(f"{t.name} (runs {t.runs})" for t in obs.threads[:4])
            + ") and the activity trace saw device work launched from several threads, none of them known "
            "as the timing thread: the launches cannot be attributed; " + HONEST_THREAD,
        )
    return None


def judge_escape(obs: Observation, timed_us: float) -> Rejection | None:
    """Reject device work (on any stream) that the timed figure does not account for."""
    if not obs.observed:
        return None
    busy = obs.device_busy_us_per_call
    if busy <= allowed_us(timed_us):
        return None
    top = ", ".join(f"{k.name[:60]} {k.duration_us:.1f} us on stream {k.stream}" for k in obs.kernels[:3])
    synced = f"{obs.synced_us_per_call:.2f} us" if obs.synced_us_per_call is not None else "not measured"
    return Rejection(
        check="observation",
        status="rejected_side_stream",
        evidence=(
            f"the activity trace saw {busy:.2f} us of device work per call on streams {obs.streams} "
            f"({top}) but "
            f"the timed figure is {timed_us:.2f} us: {busy - timed_us:.2f} us escaped the timer "
            f"(allowed: {UNACCOUNTED_REL:.0%} + {UNACCOUNTED_ABS_US:g} us); re-timed with a device-wide "
            f"synchronize: {synced} per call"
        ),
        numbers={
            "device_busy_us": busy,
            "timed_us": timed_us,
            "unaccounted_us": busy - timed_us,
            **({"synced_us": obs.synced_us_per_call} if obs.synced_us_per_call is not None else {}),
        },
    )
