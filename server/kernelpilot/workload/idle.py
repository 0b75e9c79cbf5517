"""The step's windows and every idle microsecond of the GPU by its cause.

Step windows (every gap belongs to exactly one step): step i's window runs from the first device start of
step i to the first device start of step i+1, so the gap between one step's last activity and the next
step's first belongs to the earlier step. The last step has no next step: its window ends at the last
activity's end and lacks that gap, so with two or more marked steps it is left out of every median and mean
(`StepSummary.idle_steps` says how many steps they count). Without step ranges the whole timeline is the
given number of steps (totals divided by it).

A gap is a stretch of the window where no device activity ran on any stream. Each gap is split in time by
what held the GPU idle, judged from the activity that ends it (`nxt`) and its launch call at host time L:

- L before the gap began and the call already returned: the work was queued and the device took the gap to
  start it (kernel-to-kernel latency, a wait on another stream): `queued`.
- L before the gap began but the call still running: the host's launch call itself: `launch_bound`.
- L at or after the gap began (the GPU drained before the host issued the next work): the host part
  [gap start, L) goes to the host call or op it overlaps, by priority: a synchronising call
  (`synchronization`, which API and from which op), a copy/fill call (`memory_copy`, direction and bytes),
  an outermost ATen op that launched nothing on the GPU (`cpu_op`), else `launch_bound` (dispatch and launch
  overhead between launches); the device part [L, gap end) is the launch -> start latency: `launch_bound`.
- No launch call recorded for `nxt`: `unexplained`.
Per-cause µs per step are means over the counted steps, so the causes sum to the mean idle exactly
(tests/workload/test_idle.py checks the sum, and launch-bound against a computation from the raw events).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from kernelpilot.workload.models import IdleCause, IdleGap, StreamLaunches
from kernelpilot.workload.readers.trace import Activity, HostCall, Trace

CAUSES = ("launch_bound", "synchronization", "memory_copy", "cpu_op", "queued", "unexplained")
_PRIORITY = {"synchronization": 0, "memory_copy": 1, "cpu_op": 2}
LB, LATENCY = "launch_bound", "launch -> start latency"
TOP_GAPS = 10  # the largest gaps kept with their split (the JSON stays small on a 100,000-kernel trace)
EVIDENCE = 4  # labels kept per cause


Gap = tuple[float, int, int, float, Activity, list[tuple[str, str, float]]]  # µs, order, step, start, ...


@dataclass
class StepWindows:
    """Per counted step: wall, busy, idle and each cause's µs; the steps they count."""

    walls: list[float]
    busys: list[float]
    idles: list[float]
    causes: dict[str, list[float]]
    counted: int
    labels: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (cause, label) -> [µs, n]
    gaps: list[IdleGap] = field(default_factory=list)


def _idle_ops(trace: Trace, launches: list[float]) -> list[tuple[float, float, str]]:
    """Outermost ATen ops inside which no device work was launched (CPU time the GPU waits through)."""
    out = []
    j, n = 0, len(launches)
    for s, e, name in trace.cpu_ops:  # both in start order: one cursor, no bisection
        while j < n and launches[j] < s:
            j += 1
        if j >= n or launches[j] > e:
            out.append((s, e, name))
    return out


@dataclass
class HostSide:
    """What the host did that can hold the GPU idle, as (start, end, cause, label) sorted by start:
    synchronising and copy calls, outer ops that launched nothing; `reach[i]` is the latest end among the
    first i+1, so a gap that overlaps none of them is told in one bisection (the common case)."""

    items: list[tuple[float, float, str, str]]
    starts: list[float]
    reach: list[float]


def _call_item(c: HostCall) -> tuple[float, float, str, str]:
    where = c.op or "no ATen op"
    if c.kind == "sync":
        return (c.ts_us, c.ts_us + c.dur_us, "synchronization", f"{c.name} from {where}")
    what = (c.device or "device copy") + (f", {c.nbytes:,} B" if c.nbytes is not None else "")
    return (c.ts_us, c.ts_us + c.dur_us, "memory_copy", f"{c.name} ({what}) from {where}")


def host_side(trace: Trace, acts: list[Activity]) -> HostSide:
    launches = sorted(a.launch_ts_us for a in acts if a.launch_ts_us is not None)
    items = [_call_item(c) for c in trace.host_calls]
    items += [(s, e, "cpu_op", name) for s, e, name in _idle_ops(trace, launches)]
    items.sort(key=lambda i: i[0])
    reach: list[float] = []
    top = float("-inf")
    for it in items:
        top = max(top, it[1])
        reach.append(top)
    return HostSide(items, [i[0] for i in items], reach)


def _overlaps(x: float, y: float, h: HostSide) -> list[tuple[float, float, str, str]]:
    """(start, end, cause, label) of the host calls and idle ops overlapping [x, y), clipped to it."""
    k = bisect.bisect_left(h.starts, y) - 1  # the last item starting before y
    reach, items = h.reach, h.items
    out: list[tuple[float, float, str, str]] = []
    while k >= 0 and reach[k] > x:  # some item at or before k still runs past x
        s, e, cause, label = items[k]
        if e > x:
            out.append((max(s, x), min(e, y), cause, label))
        k -= 1
    return out


def _split_host(
    x: float, y: float, over: list[tuple[float, float, str, str]], fallback: str
) -> list[tuple[str, str, float]]:
    """[x, y) cut at every boundary; each piece to the highest-priority interval covering it, else to
    `fallback` (launch-bound)."""
    if not over:
        return [("launch_bound", fallback, y - x)]
    cuts = sorted({x, y, *(s for s, _, _, _ in over), *(e for _, e, _, _ in over)})
    out: list[tuple[str, str, float]] = []
    for a, b in itertools.pairwise(cuts):
        best: tuple[str, str] | None = None
        for s, e, cause, label in over:
            if s <= a and e >= b and (best is None or _PRIORITY[cause] < _PRIORITY[best[0]]):
                best = (cause, label)
        out.append((*best, b - a) if best else ("launch_bound", fallback, b - a))
    return out


_HOST_LABEL: dict[str, str] = {}


def _host_label(what: str) -> str:
    label = _HOST_LABEL[what] = f"host before launching {what[:60]}"
    return label


def classify(e: float, s: float, nxt: Activity, h: HostSide) -> list[tuple[str, str, float]]:
    """(cause, evidence label, µs) pieces of the gap [e, s) that `nxt` ends (the rule in the docstring)."""
    launch = nxt.launch_ts_us
    what = nxt.op or nxt.name
    if launch is None:
        return [("unexplained", f"no launch call recorded for {nxt.name[:60]}", s - e)]
    if launch < e:
        if not nxt.graph and launch + (nxt.launch_dur_us or 0.0) > e:
            return [("launch_bound", f"launch call of {what} still running", s - e)]
        return [("queued", "graph replay: kernel-to-kernel latency" if nxt.graph else "queued work", s - e)]
    mid = min(launch, s)
    pieces = []
    if mid > e:
        over = _overlaps(e, mid, h)
        fallback = _HOST_LABEL.get(what) or _host_label(what)
        pieces = _split_host(e, mid, over, fallback) if over else [("launch_bound", fallback, mid - e)]
    if s > mid:
        pieces.append((LB, LATENCY, s - mid))
    return pieces


def _firsts(acts: list[Activity], steps: int) -> list[float]:
    firsts = [float("inf")] * steps
    for a in acts:
        if 0 <= a.step < steps and a.start_us < firsts[a.step]:
            firsts[a.step] = a.start_us
    return [f for f in firsts if f != float("inf")]


def windows(trace: Trace, ordered: list[Activity]) -> StepWindows:
    """Walk the device timeline once; every gap to its step window and its causes (module docstring)."""
    marked = bool(trace.step_host)
    n = trace.steps
    firsts = _firsts(ordered, n) if marked else [ordered[0].start_us]
    last_end = max(a.start_us + a.dur_us for a in ordered)
    bounds = [*firsts[1:], last_end]
    k = len(firsts)
    counted = k - 1 if marked and k > 1 else k
    idle = [0.0] * k
    causes = {c: [0.0] * k for c in CAUSES}
    labels: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    h = host_side(trace, ordered)
    starts, reach = h.starts, h.reach
    bound = causes[LB]
    fast: dict[str, list[float]] = {}  # op -> [host µs, latency µs, gaps] of the inline path
    gaps: list[Gap] = []  # a heap of the TOP_GAPS largest in the counted steps
    end = float("-inf")
    w, nxt_first = 0, firsts[1] if k > 1 else float("inf")
    for i, a in enumerate(ordered):  # the hot loop of a 100,000-kernel read
        st = a.start_us
        if st > end > float("-inf"):
            while end >= nxt_first:  # gaps come in time order: the window only moves forward
                w += 1
                nxt_first = firsts[w + 1] if w + 1 < k else float("inf")
            idle[w] += st - end
            launch = a.launch_ts_us
            inline = False  # the common case, inline: the host alone before the launch, then its latency
            if launch is not None and end <= launch < st:
                j = bisect.bisect_left(starts, launch) - 1
                inline = j < 0 or reach[j] <= end
            if inline and launch is not None:
                bound[w] += st - end
                if w < counted:
                    what = a.op or a.name
                    v = fast.get(what)
                    if v is None:
                        v = fast[what] = [0.0, 0.0, 0.0]
                    v[0] += launch - end
                    v[1] += st - launch
                    v[2] += 1
                pieces = []
            else:
                pieces = classify(end, st, a, h)
            for cause, label, us in pieces:
                causes[cause][w] += us
                if w < counted:
                    v = labels[(cause, label)]
                    v[0] += us
                    v[1] += 1
            if w < counted and (len(gaps) < TOP_GAPS or st - end > gaps[0][0]):
                if not pieces and launch is not None:  # the inline path: its pieces, for this gap only
                    host = _HOST_LABEL.get(a.op or a.name) or _host_label(a.op or a.name)
                    pieces = [(LB, host, launch - end), (LB, LATENCY, st - launch)]
                item = (st - end, i, w, end, a, pieces)
                (heapq.heappush if len(gaps) < TOP_GAPS else heapq.heapreplace)(gaps, item)
        fin = st + a.dur_us
        if fin > end:
            end = fin
    for what, (host_us, latency, count) in fast.items():
        for label, us in ((_HOST_LABEL.get(what) or _host_label(what), host_us), (LATENCY, latency)):
            v = labels[(LB, label)]
            v[0] += us
            v[1] += count
    walls = [b - f for f, b in zip(firsts, bounds, strict=True)]
    per = 1.0 if marked else float(n)
    sw = StepWindows(
        walls=[w / per for w in walls[:counted]],
        busys=[(w - i) / per for w, i in zip(walls[:counted], idle[:counted], strict=True)],
        idles=[i / per for i in idle[:counted]],
        causes={c: [v / per for v in vs[:counted]] for c, vs in causes.items()},
        counted=counted if marked else n,  # unmarked: one window holding n steps
        labels={key: [v[0] / per, v[1] / per] for key, v in labels.items()},
    )
    sw.gaps = _top_gaps(gaps, firsts)
    return sw


def _top_gaps(gaps: list[Gap], firsts: list[float]) -> list[IdleGap]:
    from kernelpilot.workload.names import short_name

    out = []
    for dur, _i, w, s, a, pieces in sorted(gaps, key=lambda g: (-g[0], g[1])):
        split: dict[str, float] = defaultdict(float)
        for cause, _label, us in pieces:
            split[cause] += us
        out.append(
            IdleGap(
                step=w,
                offset_us=s - firsts[w],
                dur_us=dur,
                causes=dict(split),
                evidence=sorted({label for _c, label, _us in pieces}),
                next_kernel=short_name(a.name, 60),
                next_op=a.op,
            )
        )
    return out


def idle_causes(sw: StepWindows) -> list[IdleCause]:
    """Each cause's mean µs per counted step, its share of idle, and its largest evidence labels."""
    steps = max(len(sw.idles), 1)
    total = sum(sw.idles) / steps
    out = []
    for cause in CAUSES:
        per = sw.causes[cause]
        us = sum(per) / steps
        ev = sorted(((v[0], v[1], lab) for (c, lab), v in sw.labels.items() if c == cause), reverse=True)
        out.append(
            IdleCause(
                cause=cause,
                us_per_step=us,
                share_of_idle=us / total if total > 0 else 0.0,
                per_step_us=per,
                evidence=[
                    f"{lab}: {v / steps:.1f} µs/step in {cnt / steps:.3g} gaps/step"
                    for v, cnt, lab in ev[:EVIDENCE]
                ],
            )
        )
    return out


def _pct(xs: list[float], q: float) -> float:
    return xs[min(int(q * len(xs)), len(xs) - 1)]


def stream_launches(acts: list[Activity]) -> list[StreamLaunches]:
    """Per stream: the launch call -> device start delay and how many launched activities were still
    queued or running on the stream when each launch call began (its queue depth)."""
    by: dict[object, list[Activity]] = defaultdict(list)
    for a in acts:
        if a.launch_ts_us is not None:
            by[a.stream].append(a)
    out = []
    for stream, xs in by.items():
        xs.sort(key=lambda a: a.launch_ts_us or 0.0)
        ends: list[float] = []
        depth: list[float] = []
        delay: list[float] = []
        for a in xs:
            t = a.launch_ts_us or 0.0
            while ends and ends[0] <= t:
                heapq.heappop(ends)
            depth.append(float(len(ends)))
            heapq.heappush(ends, a.start_us + a.dur_us)
            if not a.graph:  # a replayed kernel's launch call is the replay: its delay is not one launch's
                delay.append(a.start_us - t)
        delay.sort()
        depth.sort()
        out.append(
            StreamLaunches(
                stream=stream if isinstance(stream, int) else None,
                launches=len(xs),
                delay_median_us=statistics.median(delay) if delay else None,
                delay_p10_us=_pct(delay, 0.1) if delay else None,
                delay_p90_us=_pct(delay, 0.9) if delay else None,
                delay_max_us=delay[-1] if delay else None,
                queue_depth_median=statistics.median(depth),
                queue_depth_p90=_pct(depth, 0.9),
                queue_depth_max=int(depth[-1]),
            )
        )
    out.sort(key=lambda s: -s.launches)
    return out
