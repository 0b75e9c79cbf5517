"""Paired A/B timing: two closure sets timed in one process, interleaved, judged by the per-pair ratio.

Why: on a power-managed GPU the same kernel timed minutes apart can differ by 10 % (an 8192^3 bf16 GEMM on
an H100, issue 24), so a candidate timed now against a baseline timed earlier can invent or hide a 5 %
change. Timed in one process in ABBA blocks (A, B, B, A), both sides see the same clock, temperature and
power state within each block; a linear drift across a block cancels in its ratio (B1+B2)/(A1+A2), and the
verdict is the median of those ratios with a bootstrap CI (`stats.paired_ratio_ci`). Blocks alternate which
side goes first (A,B,B,A then B,A,A,B: `block_order`), so an effect of a sample's position in its block (the
first and last slot sit next to the neighbouring blocks) falls on each side equally often instead of always
on A.

Each sample is taken the way `kernelpilot time` takes it (`timing.gpu`): every launch queued behind a
spin hold (gap-free by observation); cold = the L2 flushed before each launch, a sample the 10th
percentile of m flushed launches (m from the side's own duration, `gpu.cold_per_sample`); warm = a graph
of `inner` back-to-back launches replayed. The number of blocks adapts to the kernel: rounds of about
`round_s` of GPU time until the ratio's CI is as tight as asked, `max_pairs` is reached or the wall budget
ends (a 1-5 ms kernel reaches a verdict in a few seconds). Each block is tagged with the clock readings
taken while it ran on the GPU (`timing.clocks`): GPU event times are mapped to the host clock through a
reference event, and a block run under a power or thermal slowdown beyond the threshold is dropped and
redone after a bounded wait for recovery.

Owns the block schedule, the GPU and CPU block timers and the stopping rule. Statistics live in `stats`,
clocks in `clocks`, the request/result models and loading of factories in `compare`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.timing import clocks, gpu
from kernelpilot.timing.errors import CallableError, NotComparableError, SideFailedError
from kernelpilot.timing.stats import paired_ratio_ci

Mode = Literal["cold", "warm"]


@dataclass
class Side:
    """One side of a comparison: a label ('baseline', 'A', ...) and its closures (rotated)."""

    label: str
    closures: list[Callable[[], Any]]
    calls: int = 0

    def call(self) -> Any:
        """The next closure; an exception is the side's, typed and named."""
        fn = self.closures[self.calls % len(self.closures)]
        self.calls += 1
        try:
            return fn()
        except Exception as exc:  # the user's closure raised: name the side, keep the cause
            raise side_error(self.label, exc, "timing") from exc

    # The guard's hooks (`guard.timed.TimedCall`), called by the timers outside each timed window: fresh
    # input values before a timed call (beside the L2 flush), its output sampled after its end event.

    def before_call(self) -> None:
        """Fresh values for the closure the next `call` runs."""
        gpu.guard_hook(self.closures[self.calls % len(self.closures)], "before_timed")

    def after_call(self) -> None:
        """Sample the output of the closure the last `call` ran."""
        gpu.guard_hook(self.closures[(self.calls - 1) % len(self.closures)], "after_timed")

    def before_all(self) -> None:
        """Fresh values for every closure (a warm sample runs them all back to back)."""
        for fn in self.closures:
            gpu.guard_hook(fn, "before_timed")

    def after_index(self, j: int) -> None:
        gpu.guard_hook(self.closures[j % len(self.closures)], "after_timed")


def side_error(label: str, exc: BaseException, where: str) -> KernelpilotError:
    """A device failure stays a GpuLostError; anything else the side raised names the side."""
    if isinstance(exc, KernelpilotError):
        return exc
    typed = gpu.wrap_device_error(exc, f"{where} of side {label}")
    if not isinstance(typed, CallableError):
        return typed
    return SideFailedError(
        f"side {label} raised {type(exc).__name__} during {where}: {exc}",
        f"fix side {label}'s factory or closure; nothing was recorded",
        side=label,
    )


@dataclass
class Block:
    """One ABBA block: A's two samples, B's two, and when it ran on the GPU (host perf_counter seconds)."""

    a: tuple[float, float]
    b: tuple[float, float]
    t0: float
    t1: float

    @property
    def ratio(self) -> float:
        """B/A over the block (a linear drift across A, B, B, A cancels); NaN when a side's samples are not
        positive (`non_positive`), which no ratio can judge."""
        if min(self.a + self.b) <= 0:
            return math.nan
        return (self.b[0] + self.b[1]) / (self.a[0] + self.a[1])


def non_positive(blocks: Sequence[Block], label_a: str = "A", label_b: str = "B") -> str | None:
    """Why these blocks cannot be judged by a ratio, or None: a sample of 0 us or less means the timed
    call put no measurable work where the timer looks (work left on another stream, deferred, or skipped
    under the timer); the guard's observation and physics then say which."""
    bad = {
        label_a: sum(1 for blk in blocks for x in blk.a if x <= 0),
        label_b: sum(1 for blk in blocks for x in blk.b if x <= 0),
    }
    if not any(bad.values()):
        return None
    parts = [f"{n} of {2 * len(blocks)} samples of side {label}" for label, n in bad.items() if n]
    return (
        " and ".join(parts) + " timed at 0 us or less: that side's timed call put no measurable work on the "
        "timed stream (work on another stream, deferred, or skipped while timed); no ratio is judged"
    )


class BlockTimer(Protocol):
    """Times n ABBA blocks; `block_s` is the wall time one block takes (sizes the rounds)."""

    method: str
    note: str
    launches: tuple[int, int]
    gap_free: bool

    def block_s(self) -> float: ...

    def run(self, n: int) -> list[Block]: ...


ORDER = "ABBA/BAAB"  # the `order` a paired result reports


def block_order(j: int) -> tuple[int, int, int, int]:
    """Side index (0 = A, 1 = B) of each slot of block j: A,B,B,A for even j, B,A,A,B for odd j."""
    return (0, 1, 1, 0) if j % 2 == 0 else (1, 0, 0, 1)


def split_block(j: int, v: Sequence[float]) -> tuple[tuple[float, float], tuple[float, float]]:
    """A's two and B's two values of block j from its four slot values, each side's in time order."""
    order = block_order(j)
    a = [x for x, s in zip(v, order, strict=True) if s == 0]
    b = [x for x, s in zip(v, order, strict=True) if s == 1]
    return (a[0], a[1]), (b[0], b[1])


# ---- output signatures: the two sides must return the same kind of thing ----


def signature(x: Any) -> Any:
    """Shape/dtype structure of a closure's return value (tensors, arrays, nested lists/tuples/dicts)."""
    if x is None:
        return None
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ("tensor", tuple(int(d) for d in x.shape), str(x.dtype))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(signature(y) for y in x))
    if isinstance(x, dict):
        return (
            "dict",
            tuple((str(k), signature(v)) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))),
        )
    return (type(x).__name__,)


def check_comparable(a: Side, b: Side, sync: Callable[[], None] = lambda: None) -> Any:
    """Call each side once; different output shapes or dtypes -> NotComparableError before any timing."""
    outs = []
    for side in (a, b):
        try:
            outs.append(side.closures[0]())
            sync()
        except Exception as exc:  # the user's closure raised on its first call
            raise side_error(side.label, exc, "the first call") from exc
    sa, sb = signature(outs[0]), signature(outs[1])
    if sa != sb:
        raise NotComparableError(
            f"the two sides return different outputs: {a.label} {sa}, {b.label} {sb}",
            "compare closures that compute the same result (same output shapes and dtypes)",
        )
    return sa


# ---- block timers ----


class GpuBlockTimer:
    """ABBA blocks of GPU samples, taken as `kernelpilot time` takes them, queued behind spin holds."""

    def __init__(
        self, torch: Any, a: Side, b: Side, mode: Mode, est_us: tuple[float, float], *, use_graph: bool = True
    ) -> None:
        self.torch = torch
        self.sides = (a, b)
        self.mode = mode
        self.hold = gpu.SpinHold(torch)
        self.floor = gpu.event_floor_us(torch, self.hold)
        self.est = est_us
        self.gap_free = True
        self.retries = 0
        self.graphs: tuple[Any, Any] = (None, None)
        if mode == "cold":
            self.flush, self.flush_bytes = gpu.make_flush(torch)
            self.launches = (gpu.cold_per_sample(est_us[0]), gpu.cold_per_sample(est_us[1]))
            self.method = "held_stream_events"
        else:
            self.flush_bytes = 0
            self.launches = (gpu.warm_inner(est_us[0]), gpu.warm_inner(est_us[1]))
            if use_graph:
                self.graphs = (
                    gpu._capture_graph(torch, a.closures, self.launches[0]),
                    gpu._capture_graph(torch, b.closures, self.launches[1]),
                )
            self.method = "graph_replay" if all(g is not None for g in self.graphs) else "held_stream_batch"
        # a block: A,B,B,A or B,A,A,B (block_order); a cold slot holds m flushed launches, a warm slot one
        # sample; both orders enqueue the same number of launches
        per = self.launches if mode == "cold" else (1, 1)
        self.layouts = [
            [(s, slot) for slot, s in enumerate(block_order(j)) for _ in range(per[s])] for j in (0, 1)
        ]
        self.per_block = len(self.layouts[0])
        self.blocks_done = 0  # blocks timed so far: which order the next one takes
        self.note = self._note()

    def _note(self) -> str:
        m_a, m_b = self.launches
        if self.mode == "cold":
            how = (
                f"cold: L2 flushed ({self.flush_bytes} B written then read) before every launch; a sample = "
                f"10th percentile of {m_a} (A) / {m_b} (B) flushed launches"
            )
        else:
            how = f"warm: a sample = {m_a} (A) / {m_b} (B) back-to-back launches ({self.method})"
        return (
            f"{how}, net of the empty event pair ({self.floor:.3f} us); blocks A,B,B,A and B,A,A,B in turn "
            "behind a spin hold"
        )

    def block_s(self) -> float:
        m_a, m_b = self.launches
        flush_us = 70.0 if self.mode == "cold" else 0.0  # ~2 x 50 MB written and read on an H100
        us = 2 * m_a * (self.est[0] + flush_us) + 2 * m_b * (self.est[1] + flush_us)
        return us / 1e6

    def _enqueue(self, i: int) -> tuple[Any, Any]:
        torch = self.torch
        j = self.blocks_done + i // self.per_block
        s_i, _slot = self.layouts[j % 2][i % self.per_block]
        side = self.sides[s_i]
        stream = torch.cuda.current_stream()
        graph = self.graphs[s_i]
        if self.mode == "cold":
            side.before_call()  # fresh input values first: the flush then evicts what they left in L2
            self.flush()
        else:
            side.before_all()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
        if self.mode == "cold":
            side.call()
        elif graph is not None:
            graph.replay()
        else:
            for _ in range(self.launches[s_i]):
                side.call()
        end.record(stream)
        if graph is not None and self.mode != "cold":
            side.after_index(self.launches[s_i] - 1)  # the graph's last captured call
        else:
            side.after_call()
        return start, end

    def run(self, n: int) -> list[Block]:
        torch = self.torch
        per_block = self.per_block
        try:
            for g in self.graphs:
                if g is not None:
                    g.replay()  # first replay uploads the graph
            torch.cuda.synchronize()
            ref = torch.cuda.Event(enable_timing=True)
            ref.record()
            ref.synchronize()
            t_ref = time.perf_counter()
            pairs, st = gpu.run_held(torch, self.hold, n * per_block, self._enqueue)
            torch.cuda.synchronize()
            durs = [s.elapsed_time(e) * 1000.0 - self.floor for s, e in pairs]
            starts = [t_ref + ref.elapsed_time(s) / 1000.0 for s, _ in pairs[::per_block]]
            ends = [t_ref + ref.elapsed_time(e) / 1000.0 for _, e in pairs[per_block - 1 :: per_block]]
        except KernelpilotError:
            raise
        except Exception as exc:  # torch raised while timing: a lost GPU or an asynchronous error
            raise gpu.wrap_device_error(exc, "paired timing") from exc
        self.gap_free = self.gap_free and st.gap_free
        self.retries += st.retries
        first = self.blocks_done
        self.blocks_done += n
        return [
            self._block(first + j, durs[j * per_block : (j + 1) * per_block], starts[j], ends[j])
            for j in range(n)
        ]

    def _block(self, j: int, durs: list[float], t0: float, t1: float) -> Block:
        slots: list[list[float]] = [[], [], [], []]
        for (_s, slot), d in zip(self.layouts[j % 2], durs, strict=True):
            slots[slot].append(d)
        if self.mode == "cold":
            v = [gpu.cold_sample(x) for x in slots]
        else:
            v = [x[0] / self.launches[s] for x, s in zip(slots, block_order(j), strict=True)]
        a, b = split_block(j, v)
        return Block(a=a, b=b, t0=t0, t1=t1)


class CpuBlockTimer:
    """ABBA blocks of host wall time (perf_counter_ns around each call): the labelled no-GPU fallback."""

    method = "cpu_perf_counter_ns"
    gap_free = True

    def __init__(self, a: Side, b: Side, est_s: float) -> None:
        self.sides = (a, b)
        self.est_s = est_s
        self.launches = (1, 1)
        self.blocks_done = 0
        self.note = (
            "CPU FALLBACK: host wall time (time.perf_counter_ns) around each call, blocks A,B,B,A and "
            "B,A,A,B in turn"
        )

    def block_s(self) -> float:
        return 4 * self.est_s

    def run(self, n: int) -> list[Block]:
        out = []
        clock = time.perf_counter_ns
        for _ in range(n):
            j = self.blocks_done
            self.blocks_done += 1
            v = []
            t0 = time.perf_counter()
            for s in block_order(j):
                side = self.sides[s]
                side.before_call()
                c0 = clock()
                side.call()
                v.append((clock() - c0) / 1000.0)
                side.after_call()
            a, b = split_block(j, v)
            out.append(Block(a=a, b=b, t0=t0, t1=time.perf_counter()))
        return out


# ---- commands: a printed metric per run, alternated the same way ----


@dataclass
class MetricPairs:
    """Both sides' metrics in run order and one ratio B/A per block; `span` = host start and end."""

    a: list[float]
    b: list[float]
    ratios: list[float]
    span: tuple[float, float]


def alternate_metrics(
    measure: tuple[Callable[[], float], Callable[[], float]],
    blocks: int,
    progress: Callable[[int, int], None] | None = None,
) -> MetricPairs:
    """`blocks` blocks of four runs in `block_order` (A,B,B,A then B,A,A,B); `measure[s]()` runs side s once
    and returns its metric. A ratio is (B1+B2)/(A1+A2), NaN when A's two metrics sum to <= 0."""
    a_s: list[float] = []
    b_s: list[float] = []
    ratios: list[float] = []
    start = time.perf_counter()
    for j in range(blocks):
        a, b = split_block(j, [measure[s]() for s in block_order(j)])
        a_s += a
        b_s += b
        ratios.append((b[0] + b[1]) / (a[0] + a[1]) if a[0] + a[1] > 0 else math.nan)
        if progress is not None:
            progress(j + 1, blocks)
    return MetricPairs(a_s, b_s, ratios, (start, time.perf_counter()))


# ---- the schedule ----


@dataclass
class Options:
    """How many pairs, for how long, and when to stop (see the module docstring)."""

    min_pairs: int = 16
    max_pairs: int = 400
    max_wall_s: float = 15.0
    target_halfwidth: float = 0.002  # stop once the ratio's CI half-width is within 0.2 % of the median
    round_s: float = 0.25
    confidence: float = 0.95
    policy: clocks.ThrottlePolicy = field(default_factory=clocks.ThrottlePolicy)


@dataclass
class PairedRun:
    """The kept blocks, what was dropped, and why the loop stopped."""

    blocks: list[Block]
    log: clocks.DropLog
    spans: list[tuple[float, float]]
    rounds: int
    stop_reason: str
    wall_s: float

    @property
    def ratios(self) -> list[float]:
        return [b.ratio for b in self.blocks]


def _next_round(
    kept: int, base: int, halfwidth: float | None, opt: Options, left_s: float, block_s: float
) -> int:
    """Blocks in the next round: the first rounds fixed, then about what the CI still needs."""
    n = base
    if halfwidth is not None and kept >= opt.min_pairs and halfwidth > 0:
        need = kept * (halfwidth / opt.target_halfwidth) ** 2 - kept
        n = max(base // 2, min(4 * base, math.ceil(need)))
    if block_s > 0:
        n = min(n, max(1, int(left_s / block_s)))
    return max(1, min(n, opt.max_pairs - kept))


def _judge_round(
    blocks: Sequence[Block],
    sampler: clocks.ClockSampler,
    opt: Options,
    reference_mhz: float | None,
    log: clocks.DropLog,
) -> list[Block]:
    """Tag each block with the readings taken while it ran; drop the throttled ones (unless persistent)."""
    readings = sampler.readings()
    kept: list[Block] = []
    dropped = 0
    for b in blocks:
        why = (
            None
            if log.persistent
            else opt.policy.why_dropped(clocks.tag(readings, b.t0, b.t1), reference_mhz)
        )
        if why is None:
            kept.append(b)
        else:
            log.dropped.append(why)
            dropped += 1
    if dropped:
        left = opt.policy.recovery_budget_s - log.waited_s
        ok, waited = clocks.wait_for_recovery(sampler, opt.policy, reference_mhz, left)
        log.waits += 1
        log.waited_s += waited
        if not ok or (dropped > opt.policy.persistent_fraction * len(blocks) and log.waits >= 3):
            log.persistent = True
    return kept


def run_blocks(
    timer: BlockTimer,
    sampler: clocks.ClockSampler,
    opt: Options,
    reference_mhz: float | None,
    progress: Callable[[int, int], None] | None = None,
) -> PairedRun:
    """Rounds of ABBA blocks until the ratio's CI is tight enough, max_pairs, or the wall budget."""
    start = time.perf_counter()
    base = max(2, min(256, math.ceil(opt.round_s / max(timer.block_s(), 1e-9))))
    kept: list[Block] = []
    spans: list[tuple[float, float]] = []
    log = clocks.DropLog()
    rounds = 0
    halfwidth: float | None = None
    while True:
        left = opt.max_wall_s - (time.perf_counter() - start)
        blocks = timer.run(_next_round(len(kept), base, halfwidth, opt, left, timer.block_s()))
        rounds += 1
        spans += [(b.t0, b.t1) for b in blocks]
        kept += _judge_round(blocks, sampler, opt, reference_mhz, log)
        if progress is not None:
            progress(len(kept), opt.max_pairs)
        invalid = non_positive(kept)
        if invalid is None and len(kept) >= 2:
            med, lo, hi = paired_ratio_ci([b.ratio for b in kept], confidence=opt.confidence)
            halfwidth = (hi - lo) / 2 / med
        if invalid is not None:
            stop = "stopped: samples at 0 us or less"
        elif len(kept) >= opt.max_pairs:
            stop = f"max_pairs ({opt.max_pairs}) reached"
        elif halfwidth is not None and len(kept) >= opt.min_pairs and halfwidth <= opt.target_halfwidth:
            stop = f"CI half-width {halfwidth:.3%} <= target {opt.target_halfwidth:.3%}"
        elif time.perf_counter() - start >= opt.max_wall_s:
            stop = f"wall budget ({opt.max_wall_s:g} s) spent"
        else:
            continue
        return PairedRun(kept, log, spans, rounds, stop, time.perf_counter() - start)


def gpu_timer(
    torch: Any, a: Side, b: Side, mode: Mode, *, warmup: int, warmup_min_s: float, use_graph: bool = True
) -> GpuBlockTimer:
    """Warm both sides up together (clocks ramp), estimate each side's time, build the block timer."""

    def labelled(side: Side) -> Callable[[], Any]:
        return lambda: side.call()

    try:
        gpu.warm_up(torch, [labelled(a), labelled(b)], warmup, warmup_min_s)
        hold = gpu.SpinHold(torch)
        est = (
            gpu.held_estimate_us(torch, hold, [labelled(a)]),
            gpu.held_estimate_us(torch, hold, [labelled(b)]),
        )
    except KernelpilotError:
        raise
    except Exception as exc:  # torch raised while warming up
        raise gpu.wrap_device_error(exc, "paired warm-up") from exc
    return GpuBlockTimer(torch, a, b, mode, est, use_graph=use_graph)
