"""GPU kernel time without launch gaps, cold (L2 flushed) and warm (back-to-back), through torch's device API.

Why: an event pair around one launch on an idle stream times the host's launch latency, not the kernel
(a 2 µs kernel reads 5-16 µs). Here every timed launch is already queued when the GPU reaches it:

- **held stream** (the NVBench method): a spin kernel (`torch.cuda._sleep`) holds the stream while a batch
  of `flush? -> start event -> closure -> end event` items is enqueued behind it. After enqueueing, the
  host asks whether the spin has already ended (`Event.query()` on an event recorded right after it); if
  it has, the GPU may have caught up with the host inside the batch, so the batch's samples are dropped,
  the hold is lengthened (or the batch shortened) and the batch runs again. Every kept sample is thus
  gap-free by observation, not by assumption.
- **cold**: before every timed launch the L2 is flushed by writing then reading a buffer of twice the L2
  size, comparable to ncu's default `--cache-control all`. By default (`_time_cold_mode`, cold timer
  `auto`) each launch is timed by its kernels' start and end in the activity trace plus the offset ncu's
  gpu__time_duration spans beyond them on this GPU model (`timing.calibration`): the event pair's own
  overhead depends on the host (issue 33). The event-pair timer below is the fallback: a cold sample is the
  10th percentile of m such launches, a robust minimum: after a flush a small kernel's own execution
  is tight (CUPTI start->end p10-p90 within 0.4 µs on 2-12 µs kernels, H100) while the event pair
  around it spreads over ~1.2 µs (launch/record overhead, which only adds). On recorded H100 launches
  (tests/fixtures/timing/cold_distributions_h100.json) the median of each sample read 0.3-0.5 µs over
  ncu on 2-12 µs kernels, the lower quartile +0.13-0.28 µs, the 10th percentile within ±0.13 µs on all
  seven kernels of 2.5-142 µs, with the lowest spread between samples (CV 0.3-1.2 %).
- **warm**: `inner` back-to-back launches per sample, captured once in a CUDA/HIP graph and replayed
  (`graph_replay`), or enqueued directly behind the hold when the closure cannot be captured
  (`held_stream_batch`); sample = elapsed / inner, comparable to steady state inside a model.

torch's `torch.cuda` API is the same on CUDA and ROCm (HIP events, HIP graphs, `_sleep`), so nothing here
is vendor-specific. This module owns the timing loops only; statistics live in `stats`, the request and
result models in `models`, the closure protocol in `callables`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kernelpilot.foundation.errors import DeviceUnavailableError, KernelpilotError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.timing.errors import CallableError, GpuLostError, TimerMismatchError
from kernelpilot.timing.models import ColdDerivation
from kernelpilot.timing.stats import quantile

L2_FLUSH_FACTOR = 2  # flush buffer = 2 x the device's reported L2 size (torch device properties)
BATCH_RUNS = 32  # timed items enqueued behind one hold (well under the launch queue's depth)
MAX_RETRIES = 6  # batches re-run with a longer hold / fewer items before giving up on a gap-free batch
WARM_SAMPLE_TARGET_US = 200.0  # a warm sample spans about this much GPU time (inner launches)
WARM_INNER_MAX = 64
COLD_SAMPLE_TARGET_US = 200.0  # a cold sample: flushed launches spanning about this long
COLD_SAMPLE_QUANTILE = 0.10  # ... of which the 10th percentile (see the module docstring)
COLD_PER_SAMPLE_MAX = 64
COLD_MIN_SAMPLES = 10  # at least this many cold samples, even when `runs` launches would make fewer
HOLD_MARGIN = 2.0  # hold = margin x the host's time per item x items, plus a floor
HOLD_FLOOR_US = 50.0
HOLD_MAX_US = 20_000.0  # never hold the GPU longer than this at once
# The calibration spin's event time must be at least this share of the host's wall time around it (the
# best of three spins is compared). The host adds launch and wake-up latency, and at times milliseconds: in
# the H100 guard suite an unmodified timer read 1.01 ms for a spin the host saw take 4.7 ms (21.6 %) on
# all three tries. A replaced timer reads ~1e-9 of it; 2 % still bounds every hold to 50x its length.
TIMER_AGREEMENT = 0.02

ColdTimer = Literal["auto", "events", "trace"]
Method = Literal[
    "held_stream_events", "held_stream_trace", "graph_replay", "held_stream_batch", "unheld_events"
]


@dataclass
class ModeTiming:
    """Samples of one timing mode and how they were taken."""

    mode: Literal["cold", "warm"]
    method: Method
    samples_us: list[float]
    launches_per_sample: int
    gap_free: bool
    retries: int
    note: str
    l2_flush_bytes: int | None = None
    kernels_per_launch: int | None = None  # cold, traced: kernels the closure runs per launch
    derivation: ColdDerivation | None = None  # cold: how the figure was derived (timing.calibration)


@dataclass
class HoldStats:
    """What the hold loop did (for the result's note)."""

    batches: int = 0
    retries: int = 0
    gap_free: bool = True
    hold_us: float = HOLD_FLOOR_US
    enqueue_us_per_item: list[float] = field(default_factory=list)


def guard_hook(fn: Callable[[], Any], name: str) -> None:
    """A contract task's closure (`guard.timed.TimedCall`) hooks the timed loop outside each event pair."""
    hook = getattr(fn, name, None)
    if hook is not None:
        hook()


def _is_device_error(exc: BaseException) -> bool:
    text = str(exc)
    markers = ("CUDA error", "HIP error", "device-side assert", "unspecified launch failure", "ECC error")
    return isinstance(exc, RuntimeError) and any(m in text for m in markers)


def wrap_device_error(exc: BaseException, where: str) -> KernelpilotError:
    """A typed error for an exception raised while timing: a lost/failed GPU or the user's code."""
    if isinstance(exc, KernelpilotError):
        return exc
    if _is_device_error(exc):
        return GpuLostError(
            f"the GPU failed during {where}: {type(exc).__name__}: {str(exc).splitlines()[0]}",
            "check `nvidia-smi`/`rocm-smi` (is the GPU still there, an Xid/ECC event?), then re-run; "
            "run with CUDA_LAUNCH_BLOCKING=1 to locate a failing kernel",
        )
    return CallableError(
        f"the timed closure raised {type(exc).__name__} during {where}: {exc}", "fix the closure"
    )


class SpinHold:
    """Holds the current stream with a spin kernel of a requested length (calibrated to µs)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        sleep = getattr(torch.cuda, "_sleep", None)
        self.available = callable(sleep)
        self.cycles_per_us = 1000.0
        if self.available:
            self.cycles_per_us = self._calibrate()

    def _calibrate(self) -> float:
        """Cycles per us of the spin kernel, from event-timed spins checked against the host clock.

        Why the check: the holds are sized from this figure, so an event timer that reads ~0 (a replaced
        `Event.elapsed_time`) would make every hold millions of times too long and the process hang."""
        torch = self.torch
        cycles = 2_000_000
        torch.cuda._sleep(cycles // 10)  # first launch loads the module
        best, agreement, host_best = math.inf, 0.0, math.inf
        for _ in range(3):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()  # the queue is empty but for the first spin (which only adds to it)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            host_us = (time.perf_counter() - t0) * 1e6
            event_us = start.elapsed_time(end) * 1000.0
            best = min(best, event_us)
            host_best = min(host_best, host_us)
            agreement = max(agreement, event_us / host_us if host_us > 0 else 1.0)
        if agreement < TIMER_AGREEMENT:
            raise TimerMismatchError(
                f"the CUDA event timer read {best:.3g} us for a {cycles}-cycle spin the host clock saw take "
                f"{host_best:.1f} us (at most {agreement:.1%} of it, at least {TIMER_AGREEMENT:.0%} "
                "expected): the event timer is not measuring",
                "time with unmodified torch.cuda timing functions (was Event.elapsed_time replaced?)",
            )
        return cycles / best if best > 0 else 1000.0

    def hold(self, us: float) -> None:
        if self.available:
            self.torch.cuda._sleep(max(1, int(us * self.cycles_per_us)))


def run_held(
    torch: Any,
    hold: SpinHold,
    count: int,
    enqueue: Callable[[int], tuple[Any, Any]],
    *,
    batch: int = BATCH_RUNS,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[tuple[Any, Any]], HoldStats]:
    """Enqueue `count` timed items behind spin holds; return the (start, end) events of gap-free batches.

    `enqueue(i)` enqueues item i and returns its event pair. Each hold lasts HOLD_MARGIN x (the host's
    time per item, as last observed) x (items in the batch), plus a floor, capped at HOLD_MAX_US. A
    batch whose hold ended before the host finished enqueueing it is discarded and re-run with twice the
    per-item allowance; if the host was blocked (far slower per item than usual: a full launch queue),
    with half the items. The allowance follows what the host does, so it cannot run away.
    """
    stats = HoldStats()
    kept: list[tuple[Any, Any]] = []
    per_item_us = 0.0  # learned from the first batch (re-run if its hold was too short)
    typical_us: float | None = None  # per-item host time of accepted batches (blocked-host detection)
    i = 0
    tries = 0
    while i < count:
        n = min(batch, count - i)
        hold_us = min(HOLD_MAX_US, HOLD_MARGIN * per_item_us * n + HOLD_FLOOR_US)
        hold_end = torch.cuda.Event()
        hold.hold(hold_us)
        hold_end.record()
        t0 = time.perf_counter()
        pairs = [enqueue(i + j) for j in range(n)]
        enq_us = (time.perf_counter() - t0) * 1e6
        observed = enq_us / n
        caught_up = bool(hold_end.query()) if hold.available else True
        stats.enqueue_us_per_item.append(observed)
        stats.hold_us = max(stats.hold_us, hold_us)
        if caught_up and hold.available and tries < MAX_RETRIES:
            tries += 1
            stats.retries += 1
            blocked = typical_us is not None and observed > 4 * typical_us
            if (blocked or hold_us >= HOLD_MAX_US) and batch > 1:
                batch = max(1, batch // 2)
            per_item_us = max(2 * per_item_us, observed)
            continue
        if caught_up:
            stats.gap_free = False
        kept.extend(pairs)
        stats.batches += 1
        i += n
        tries = 0
        typical_us = observed if typical_us is None else min(typical_us, observed)
        per_item_us = typical_us  # the fastest the host has been: a blocked host must not lengthen holds
        if progress is not None:
            progress(i)
    return kept, stats


def make_flush(torch: Any) -> tuple[Callable[[], None], int]:
    """An L2 flush of 2x the device's L2 size: write a buffer, then read it back (outside the timing)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    if l2 <= 0:
        raise DeviceUnavailableError(
            "torch does not report this GPU's L2 size, so the cold-cache flush buffer cannot be sized",
            "time in warm mode only (--timing warm), or upgrade torch",
        )
    nbytes = L2_FLUSH_FACTOR * l2
    buf = torch.empty(nbytes, dtype=torch.uint8, device="cuda")

    def flush() -> None:
        # Write the buffer, then read it back. A write-only flush leaves the L2 full of dirty lines whose
        # write-back the timed kernel pays (+2.7 % against ncu on an H100, 2026-11-22); a read-only flush
        # read 0.3-0.7 us higher than write-then-read on 2-12 us kernels against ncu (H100, 2026-11-23).
        buf.zero_()
        buf.max()

    return flush, nbytes


def warm_up(torch: Any, closures: Sequence[Callable[[], Any]], warmup: int, min_s: float) -> float:
    """Run `warmup` calls and at least `min_s` of wall time (clocks ramp up); return µs per call (GPU)."""
    k = len(closures)
    deadline = time.perf_counter() + min_s
    i = 0
    try:
        torch.cuda.synchronize()
        while i < warmup or time.perf_counter() < deadline:
            closures[i % k]()
            i += 1
            if i % 8 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        # A rough per-call GPU time (events around a few queued calls) sizes the warm samples.
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        reps = 8
        start.record()
        for j in range(reps):
            closures[j % k]()
        end.record()
        end.synchronize()
    except Exception as exc:
        raise wrap_device_error(exc, "warm-up") from exc
    return float(start.elapsed_time(end)) * 1000.0 / reps


def _per_sample(est_us: float, target_us: float, most: int) -> int:
    """Launches whose GPU time adds up to about `target_us`, between 1 and `most` (unknown: `most`)."""
    if est_us <= 0 or math.isnan(est_us):
        return most
    return max(1, min(most, math.ceil(target_us / est_us)))


def cold_per_sample(est_us: float) -> int:
    """Flushed launches in one cold sample: single cold launches of a few µs vary by up to 1.3 µs (the
    event pair's launch/record overhead after a flush; H100, 2026-11-23), so a sample is the 10th
    percentile of enough of them to span about COLD_SAMPLE_TARGET_US of kernel time. With 16 per sample a
    2.7 µs kernel's samples varied by CV 1.9-2.5 % between runs; 64 bring that down by about half."""
    return _per_sample(est_us, COLD_SAMPLE_TARGET_US, COLD_PER_SAMPLE_MAX)


def cold_plan(runs: int, est_us: float) -> tuple[int, int]:
    """(launches per sample m, launches in all): `runs` launches rounded up to whole samples, and never
    fewer than COLD_MIN_SAMPLES samples, so a kernel of a few µs gets more flushed launches than `runs`
    (at most COLD_MIN_SAMPLES x COLD_PER_SAMPLE_MAX, each a ~70 µs flush plus the kernel: ~50 ms)."""
    m = cold_per_sample(est_us)
    return m, max(math.ceil(runs / m), COLD_MIN_SAMPLES) * m


def cold_sample(launches_us: Sequence[float]) -> float:
    """One cold sample from m flushed launches: their 10th percentile (linear interpolation)."""
    return quantile(sorted(launches_us), COLD_SAMPLE_QUANTILE)


def time_cold(
    torch: Any,
    hold: SpinHold,
    closures: Sequence[Callable[[], Any]],
    runs: int,
    progress: Callable[[int], None] | None = None,
    *,
    est_us: float = math.inf,
    floor_us: float = 0.0,
) -> ModeTiming:
    """Flushed launches (`cold_plan`), each with the L2 flushed before it outside its event pair, net of
    the empty event pair's reading, all queued behind holds; a sample is the 10th percentile of m
    consecutive launches (m = 1 for kernels of COLD_SAMPLE_TARGET_US and more)."""
    flush, nbytes = make_flush(torch)
    k = len(closures)
    m, launches = cold_plan(runs, est_us)
    stream = torch.cuda.current_stream()

    def enqueue(i: int) -> tuple[Any, Any]:
        guard_hook(closures[i % k], "before_timed")  # fresh input values, outside the window (guard.timed)
        flush()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(stream)
        closures[i % k]()
        e.record(stream)
        guard_hook(closures[i % k], "after_timed")  # the output sampled as returned, after the end event
        return s, e

    def report(done: int) -> None:
        if progress is not None:
            progress(min(runs, done * runs // launches))

    try:
        pairs, st = run_held(torch, hold, launches, enqueue, progress=report)
        torch.cuda.synchronize()
        single = [s.elapsed_time(e) * 1000.0 - floor_us for s, e in pairs]
    except Exception as exc:
        raise wrap_device_error(exc, "cold timing") from exc
    samples = [cold_sample(single[i : i + m]) for i in range(0, len(single), m)]
    method: Method = "held_stream_events" if hold.available else "unheld_events"
    note = (
        f"cold: L2 flushed (a {nbytes} B buffer written then read) before every launch, outside its "
        "event pair; "
        + (f"sample = 10th percentile of {m} such launches" if m > 1 else "sample = one such launch")
        + f", net of the empty event pair ({floor_us:.3f} us); "
        + _hold_note(hold, st)
    )
    return ModeTiming("cold", method, samples, m, st.gap_free, st.retries, note, nbytes)


def _flush_and_hold(flush: Callable[[], None], hold: SpinHold) -> None:
    flush()
    hold.hold(10.0)


def launch_spans(
    events: Sequence[tuple[str, float, float]], kernels_per_launch: int, offset_us: float
) -> list[float]:
    """Per launch: the summed traced span of its `kernels_per_launch` kernels plus `offset_us` per kernel
    (the closure's own events, in start order)."""
    kc = kernels_per_launch
    return [
        sum(d for _, _, d in events[j * kc : (j + 1) * kc]) + kc * offset_us for j in range(len(events) // kc)
    ]


def time_cold_trace(
    torch: Any,
    hold: SpinHold,
    closures: Sequence[Callable[[], Any]],
    runs: int,
    progress: Callable[[int], None] | None = None,
    *,
    est_us: float = math.inf,
    offset_us: float = 0.0,
) -> ModeTiming | None:
    """Cold launches timed by the activity trace (CUPTI / roctracer kernel start to end, the span Nsight
    Systems shows), queued behind holds like `time_cold`, plus `offset_us` per kernel (what ncu's
    gpu__time_duration spans beyond the traced kernel: `timing.calibration`); None when the closure's
    kernels cannot be told apart from the flush's and the hold's (then the caller uses event pairs)."""
    from kernelpilot.timing.kernels import device_events, traced

    if getattr(torch, "profiler", None) is None:
        return None
    flush, nbytes = make_flush(torch)
    k = len(closures)
    try:
        other = {
            n for n, _, _ in device_events(traced(torch, lambda: _flush_and_hold(flush, hold), cpu=False))
        }
        own = [n for n, _, _ in device_events(traced(torch, closures[0], cpu=False))]
    except Exception as exc:
        raise wrap_device_error(exc, "cold timing (activity trace)") from exc
    if not own or other & set(own):
        return None
    kc = len(own)
    m, launches = cold_plan(runs, est_us)
    st = HoldStats()

    def enqueue(i: int) -> tuple[Any, Any]:
        flush()
        closures[i % k]()
        return None, None

    def work() -> None:
        nonlocal st
        _, st = run_held(torch, hold, launches, enqueue, progress=None)

    try:
        events = [e for e in device_events(traced(torch, work, cpu=False)) if e[0] not in other]
    except Exception as exc:
        raise wrap_device_error(exc, "cold timing (activity trace)") from exc
    # A batch re-run after a caught-up hold leaves its launches in the trace too; they are valid here
    # (a kernel's own start-to-end time has no launch gap in it), so every traced launch is a sample.
    if len(events) < launches * kc:
        return None
    single = launch_spans(events, kc, offset_us)
    if progress is not None:
        progress(runs)
    samples = [statistics.median(single[i : i + m]) for i in range(0, len(single), m)]
    plus = f" plus {offset_us:.3f} us per kernel (ncu's span beyond the trace's)" if offset_us else ""
    note = (
        f"cold: L2 flushed (a {nbytes} B buffer written then read) before every launch; each launch's "
        f"kernel time from the activity trace (kernel start to end, summed over its {kc} kernel(s)){plus}; "
        f"sample = median of {m} such launches; " + _hold_note(hold, st)
    )
    return ModeTiming(
        "cold", "held_stream_trace", samples, m, st.gap_free, st.retries, note, nbytes, kernels_per_launch=kc
    )


def _hold_note(hold: SpinHold, st: HoldStats) -> str:
    if not hold.available:
        return "no spin kernel in this torch (torch.cuda._sleep): launches were NOT held, gaps possible"
    per_item = sorted(st.enqueue_us_per_item)[len(st.enqueue_us_per_item) // 2]
    text = (
        f"{st.batches} batches queued behind a spin hold of up to {st.hold_us:.0f} us "
        f"(host enqueue {per_item:.1f} us/item)"
    )
    if st.retries:
        text += f"; {st.retries} batches re-run because the GPU caught up with the host"
    if not st.gap_free:
        text += "; WARNING: some batches still caught up after retries, so launch gaps may be inside"
    return text


def _capture_graph(torch: Any, closures: Sequence[Callable[[], Any]], inner: int) -> Any | None:
    """A graph of `inner` back-to-back calls, or None when the closure cannot be captured."""
    k = len(closures)
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for j in range(min(3, inner)):
                closures[j % k]()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for j in range(inner):
                closures[j % k]()
        torch.cuda.synchronize()
        return graph
    except Exception as exc:
        if _is_device_error(exc) and "capture" not in str(exc).lower():
            raise wrap_device_error(exc, "graph capture") from exc
        try:
            torch.cuda.synchronize()
        except Exception as exc2:  # the failed capture left the device unusable
            raise wrap_device_error(exc2, "graph capture") from exc2
        return None


def warm_inner(est_us: float) -> int:
    """Launches per warm sample: enough that a sample spans ~WARM_SAMPLE_TARGET_US of GPU time."""
    return _per_sample(est_us if math.isfinite(est_us) else 0.0, WARM_SAMPLE_TARGET_US, WARM_INNER_MAX)


def time_warm(
    torch: Any,
    hold: SpinHold,
    closures: Sequence[Callable[[], Any]],
    runs: int,
    est_us: float,
    *,
    use_graph: bool = True,
    progress: Callable[[int], None] | None = None,
    floor_us: float = 0.0,
) -> ModeTiming:
    """`inner` back-to-back launches per sample (graph replay, else direct), queued behind a hold; sample =
    (elapsed - empty event pair) / inner."""
    inner = warm_inner(est_us)
    k = len(closures)
    stream = torch.cuda.current_stream()
    graph = _capture_graph(torch, closures, inner) if use_graph else None

    def enqueue(i: int) -> tuple[Any, Any]:
        for fn in closures:
            guard_hook(fn, "before_timed")  # fresh input values, outside the window (guard.timed)
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(stream)
        if graph is not None:
            graph.replay()
        else:
            for j in range(inner):
                closures[(i * inner + j) % k]()
        e.record(stream)
        last = (inner - 1) % k if graph is not None else (i * inner + inner - 1) % k
        guard_hook(closures[last], "after_timed")  # the last call's output, as it returned it
        return s, e

    try:
        if graph is not None:
            graph.replay()  # first replay uploads the graph
            torch.cuda.synchronize()
        pairs, st = run_held(torch, hold, runs, enqueue, progress=progress)
        torch.cuda.synchronize()
        samples = [(s.elapsed_time(e) * 1000.0 - floor_us) / inner for s, e in pairs]
    except Exception as exc:
        raise wrap_device_error(exc, "warm timing") from exc
    method: Method = "graph_replay" if graph is not None else "held_stream_batch"
    how = (
        f"a captured graph of {inner} launches replayed"
        if graph is not None
        else f"{inner} launches enqueued directly (the closure could not be captured in a graph)"
    )
    note = (
        f"warm: back-to-back launches, no flush; each sample = {how}, (elapsed - empty event pair "
        f"{floor_us:.3f} us) / {inner}; " + _hold_note(hold, st)
    )
    return ModeTiming("warm", method, samples, inner, st.gap_free, st.retries, note)


def event_floor_us(torch: Any, hold: SpinHold, runs: int = 64) -> float:
    """Median elapsed time of an empty event pair queued behind a hold: what 'nothing' reads as."""
    stream = torch.cuda.current_stream()

    def enqueue(_: int) -> tuple[Any, Any]:
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(stream)
        e.record(stream)
        return s, e

    pairs, _ = run_held(torch, hold, runs, enqueue)
    torch.cuda.synchronize()
    vals = sorted(s.elapsed_time(e) * 1000.0 for s, e in pairs)
    return float(vals[len(vals) // 2])


def held_estimate_us(
    torch: Any, hold: SpinHold, closures: Sequence[Callable[[], Any]], calls: int = 8
) -> float:
    """GPU µs per call of back-to-back calls queued behind a hold (sizes the warm samples)."""
    k = len(closures)
    stream = torch.cuda.current_stream()

    def enqueue(_: int) -> tuple[Any, Any]:
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(stream)
        for j in range(calls):
            closures[j % k]()
        e.record(stream)
        return s, e

    pairs, _ = run_held(torch, hold, 3, enqueue)
    torch.cuda.synchronize()
    return min(float(s.elapsed_time(e)) * 1000.0 / calls for s, e in pairs)


def _time_cold_mode(
    torch: Any,
    hold: SpinHold,
    closures: Sequence[Callable[[], Any]],
    runs: int,
    report: Callable[[int], None],
    est: float,
    floor: float,
    cold_timer: ColdTimer,
) -> ModeTiming:
    """auto: traced spans plus this GPU's offset when `timing.calibration` has one, else event pairs;
    trace: traced spans alone; events: event pairs net of the empty pair. The result says which."""
    from kernelpilot.timing import calibration

    def span_us(fn: Callable[[], Any]) -> float | None:
        t = time_cold_trace(torch, hold, [fn], 64)
        return statistics.median(t.samples_us) if t is not None and t.samples_us else None

    traced = None
    why = "the activity trace did not separate the closure's kernels (no trace, or the flush's kernel names)"
    offset = None
    if cold_timer == "auto":
        try:
            offset = calibration.lookup(torch, lambda: calibration.calibrate_with_ncu(torch, span_us))
        except Exception as exc:  # torch or ncu failing while measuring the offset: event pairs, labelled
            why = f"measuring this GPU's offset failed ({type(exc).__name__}: {str(exc)[:160]})"
    guarded = any(
        getattr(fn, h, None) is not None for fn in closures for h in ("before_timed", "after_timed")
    )
    if guarded and cold_timer == "auto":  # the guard's fresh inputs and output samples need the hooked loop
        why = "the closure carries the guard's hooks (guard.timed), which the event-pair loop calls"
    if cold_timer == "trace" or (offset is not None and not guarded):
        off_us = offset.offset_us if offset is not None else 0.0
        try:
            traced = time_cold_trace(
                torch, hold, closures, runs, progress=report, est_us=est, offset_us=off_us
            )
        except (CallableError, GpuLostError) as exc:
            if cold_timer == "trace":
                raise
            # auto: a profiler that cannot run here (another profiler attached) must not fail the timing;
            # a failing closure or GPU fails the event pairs below as well
            why = f"the activity trace failed ({exc.message[:160]})"
    if traced is not None:
        traced.derivation = calibration.derive_traced(offset, traced.kernels_per_launch)
        return traced
    timing = time_cold(torch, hold, closures, runs, progress=report, est_us=est, floor_us=floor)
    if cold_timer == "events":
        why = "event pairs asked for (--cold-timer events)"
    elif offset is None and cold_timer == "auto" and not why.startswith(("measuring", "the closure carries")):
        why = f"no measured offset for this GPU ({torch.cuda.get_device_name()}) and ncu did not measure one"
    timing.derivation = calibration.derive_events(floor, why)
    return timing


def time_modes(
    torch: Any,
    closures: Sequence[Callable[[], Any]],
    *,
    modes: Sequence[Literal["cold", "warm"]],
    runs: int,
    warmup: int,
    warmup_min_s: float,
    use_graph: bool = True,
    progress: Progress = no_progress,
    cold_timer: ColdTimer = "auto",
) -> tuple[dict[str, ModeTiming], float, float]:
    """Warm up, then time each requested mode; returns the timings, the event floor and the estimate."""
    est = warm_up(torch, closures, warmup, warmup_min_s)
    try:
        hold = SpinHold(torch)
        floor = event_floor_us(torch, hold)
        if hold.available:
            est = held_estimate_us(torch, hold, closures)
    except Exception as exc:
        raise wrap_device_error(exc, "hold calibration") from exc
    total = runs * len(modes)
    out: dict[str, ModeTiming] = {}
    for n, mode in enumerate(modes):
        base = n * runs

        def report(done: int, base: int = base, mode: str = mode) -> None:
            progress(base + done, total, f"{mode}: {done}/{runs} runs")

        if mode == "cold":
            out["cold"] = _time_cold_mode(torch, hold, closures, runs, report, est, floor, cold_timer)
        else:
            out["warm"] = time_warm(
                torch, hold, closures, runs, est, use_graph=use_graph, progress=report, floor_us=floor
            )
    return out, floor, est
