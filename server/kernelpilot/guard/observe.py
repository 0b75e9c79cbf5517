"""Watching the timed closure from outside its code: replaced timers, started threads, all-stream work.

Why: a closure timed by events on the current stream can hide its work on another stream, in a thread,
or behind a patched timer (docs/eval-design.md, "The seam between the two halves"). `Watch` is created
before the candidate's module is imported and snapshots the timing functions kernelpilot relies on (by
identity) and installs a thread-start hook (`threading.setprofile`); `observe` traces calls of the
closures with torch.profiler (CUPTI/roctracer record device activity on every stream and context) and
re-times them with a device-wide synchronize; `judge` compares that with the timed figure.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kernelpilot.guard.models import KernelSeen, Observation, Rejection, Tolerance

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
)
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
# Threads started by code that is not the candidate's: torch.compile's worker pool, and kernelpilot's own
# NVML clock sampler (timing.clocks.ClockSampler, which runs while the sides are timed).
ALLOWED_THREAD_MODULES = ("torch._inductor", "concurrent.futures.process", "kernelpilot.timing.clocks")

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


class Watch:
    """Snapshot of the timing functions and a thread-start hook; `findings()` says what changed since."""

    def __init__(self, import_torch: bool = True) -> None:
        if import_torch and "torch" not in sys.modules and importlib.util.find_spec("torch") is not None:
            importlib.import_module("torch")  # so torch's timers exist to snapshot before the candidate
        for name in OWN_MODULES:  # kernelpilot's timing functions exist to snapshot before the candidate
            importlib.import_module(name)
        self.timers = {f"{m}.{p}": _resolve(m, p) for m, p in TIMERS}
        self.own = _own_functions()
        self.started: list[str] = []
        self.trace_device = True  # whether the timing process also takes the activity trace
        self.ended = False  # findings() was called: the thread-start hook is gone
        self._previous_hook = threading.getprofile()
        threading.setprofile(self._thread_started)

    def _thread_started(self, frame: Any, event: str, arg: Any) -> None:
        """Runs once in every thread started through `threading` while the watch is on."""
        sys.setprofile(None)
        t = threading.current_thread()
        target = getattr(t, "_target", None)
        where = getattr(target, "__module__", None) or type(t).__module__
        if not where.startswith(ALLOWED_THREAD_MODULES):
            what = getattr(target, "__qualname__", type(t).__qualname__)
            self.started.append(f"{t.name} (runs {where}.{what})")

    def replaced(self) -> list[str]:
        out = [
            name
            for name, before in self.timers.items()
            if before is not None and _resolve(*_split(name)) is not before
        ]
        now = _own_functions()
        out += [name for name, fn in self.own.items() if now.get(name) is not fn]
        if not self.ended and threading.getprofile() != self._thread_started:
            out.append("threading.setprofile (the thread-start watch was removed)")
        return out

    def seen(self) -> list[str]:
        """What `findings` would say, while the watch goes on (`guard.checked` keeps one watch from the
        candidate's first import to the end of its timing)."""
        return [f"replaced: {r}" for r in self.replaced()] + [f"thread started: {t}" for t in self.started]

    def findings(self) -> list[str]:
        """Replaced timing functions and threads started since the watch began (then stops watching)."""
        seen = self.seen()
        if not self.ended:
            threading.setprofile(self._previous_hook)
            self.ended = True
        return seen


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


def unobserved(why: str, watch: Watch | None) -> Observation:
    obs = Observation(observed=False, why_unobserved=why)
    return with_findings(obs, watch)


def with_findings(obs: Observation, watch: Watch | None) -> Observation:
    if watch is None:
        return obs
    obs.replaced = watch.replaced()
    obs.threads_started = list(watch.started)
    obs.watch_findings = watch.findings()
    return obs


def observe(
    torch: Any, closures: Sequence[Callable[[], Any]], calls: int = 10, timed_us: float | None = None
) -> Observation:
    """The timed calls' outputs (`timed_outputs`), then `calls` calls re-timed with a device-wide
    synchronize around them and, unless that already settles it, `calls` calls traced on every stream.
    Call it right after the timing, before anything else calls the closures.

    Why the synchronized calls first: every device interval of those calls, on any stream, lies between
    the two synchronizes, so their wall time per call bounds the union the trace would measure. When it is
    within what `judge` allows over `timed_us` (the figure the timing reported), the trace could not
    reject and is skipped (`busy_from="synchronize"`): the profiler's start-up costs seconds per process.
    """
    from kernelpilot.timing.kernels import traced

    k = len(closures)
    clock = _CLOCK

    def work() -> None:
        for i in range(calls):
            closures[i % k]()

    outputs = timed_outputs(closures)  # first: what the timed calls left, before these calls replace it
    start = clock()
    torch.cuda.synchronize()
    t0 = clock()
    work()
    torch.cuda.synchronize()
    synced = (clock() - t0) * 1e6 / calls
    if timed_us is not None and synced <= allowed_us(timed_us):
        obs = Observation(observed=True, calls=calls, device_busy_us_per_call=synced, busy_from="synchronize")
    else:
        obs = observation_from_trace(traced(torch, work, cpu=False), calls)
    obs.timed_outputs = outputs
    obs.synced_us_per_call = synced
    obs.seconds = clock() - start
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


def judge_outputs(obs: Observation, refs: list[list[float]], tol: Tolerance) -> Rejection | None:
    """The timed calls' outputs against the reference on the same inputs (`harness` computes `refs`)."""
    if not refs or not obs.timed_outputs:
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
    """Reject a replaced timer, a started thread, or device work the timed figure does not account for."""
    return judge_findings(obs) or judge_escape(obs, timed_us)


def judged(
    obs: Observation, timed_us: float, refs: list[list[float]] | None, tol: Tolerance | None
) -> Rejection | None:
    """The guard's order: what the Watch saw, then the timed outputs, then work that escaped the timer. A
    call that returns something else under the timer (a cached answer) also leaves its traced work outside
    the timed figure; its outputs name the hack, the escape only the symptom."""
    return (
        judge_findings(obs)
        or (judge_outputs(obs, refs, tol) if refs and tol is not None else None)
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
            evidence="threads started after the timing process began watching (by the candidate's module "
            "or its calls): " + ", ".join(obs.threads_started),
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
