"""PyTorch profiler (Kineto) Chrome-trace JSON: device activity with its launch call, op, ranges and step.

What the export carries (torch 2.x, `prof.export_chrome_trace`): complete events (`ph: "X"`) whose `cat`
says what they are: `kernel` / `gpu_memcpy` / `gpu_memset` on the device (args: `correlation`,
`External id`, grid, block, stream), `cuda_runtime` / `cuda_driver` launch calls on the host (same
`correlation`; `cudaGraphLaunch` for graph replays, whose kernels carry the replay's correlation),
`cpu_op` ATen ops (`External id`, `Input Dims` with `record_shapes`), `user_annotation` for
`record_function` ranges (the runner's `kernelpilot.step#<i>` steps and `nn.Module: <Class>` modules;
`ProfilerStep#<i>` from `prof.step()`), and `python_function` events named `nn.Module: X_0` with
`with_stack`. Ranges and ops around a kernel are found at the host time of its launch call, on the
launching thread.

Speed (bench/workload_bench.py: 100,000 kernels in at most 2 s): the file is decoded into the few fields
read (`readers.kineto_events`), events go into buckets in one pass, launches are joined to their calls and
ops through dicts (correlation, External id), and ranges, modules and outer ops are found in one pass in
launch order with cursors over them (each sorted once by start; a bisection per launch cost more).
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.readers.kineto_events import UNSET, Decoded, decode_trace
from kernelpilot.workload.readers.trace import Activity, HostCall, Trace

if TYPE_CHECKING:
    from kernelpilot.workload.readers.kineto_events import Event

_DEVICE = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_RUNTIME = ("cuda_runtime", "cuda_driver")
_STEP = re.compile(r"^(?:kernelpilot\.step#|ProfilerStep#)(\d+)$")
_MODULE = "nn.Module: "
_INSTANCE = re.compile(r"_\d+$")  # with_stack names modules "Linear_0"
_COPY = re.compile(r"^(?:cuda|hip)Memcpy|^cuMemcpy|^(?:cuda|hip)Memset|^cuMemset")  # workload/idle.py
_SYNC = re.compile(r"(?:Synchronize|^(?:cuda|hip)Memcpy(?!Async)|^cuMemcpy(?!Async)|^cuStreamSynchronize)")
_PHASES = ("prefill", "decode", "backward", "forward", "optimizer")
_BACKWARD_OP = "autograd::engine::evaluate_function"
_LAUNCH, _START = operator.attrgetter("launch_ts_us"), operator.attrgetter("start_us")

Interval = tuple[float, float, str]


class _Nest:
    """Intervals that nest, as ranges on one thread do, sorted once. `at(t)`, for increasing `t`, is the
    innermost interval open at `t`: the last one started by `t` (a cursor over the starts), else its
    closest enclosing one still open (a walk up the parent links set in one stack sweep). Intervals that
    overlap without nesting read as a stack sweep over them in time order would leave them
    (tests/workload/test_breakdown.py checks both against one)."""

    def __init__(self, intervals: list[Interval]) -> None:
        self.items = sorted(intervals, key=lambda i: (i[0], -i[1]))
        self.starts = [iv[0] for iv in self.items] + [float("inf")]  # the end needs no bounds check
        self.parent: list[int] = []  # index of the interval it was opened in, -1 for none
        self.next = 0  # cursor: the first interval not started by the last query
        open_: list[int] = []
        for k, (start, _, _) in enumerate(self.items):
            while open_ and self.items[open_[-1]][1] < start:  # closed before this one opened
                open_.pop()
            self.parent.append(open_[-1] if open_ else -1)
            open_.append(k)

    def at(self, t: float) -> int:
        """Index of the innermost interval open at `t` (not less than the last query's), -1 when none is."""
        starts, k = self.starts, self.next
        while starts[k] <= t:  # comparisons, not bisection: each start is passed once
            k += 1
        self.next = k
        k -= 1
        items = self.items
        while k >= 0 and items[k][1] < t:
            k = self.parent[k]
        return k

    def stack(self, k: int, t: float) -> list[Interval]:
        """The intervals open at `t` around interval `k` (`at(t)`), outermost first."""
        out: list[Interval] = []
        while k >= 0:
            if self.items[k][1] >= t:
                out.append(self.items[k])
            k = self.parent[k]
        out.reverse()
        return out


class _Buckets:
    """Events sorted by category in one pass (a plain loop: this is the hot path of a 100,000-kernel read)."""

    def __init__(self, decoded: Decoded) -> None:
        self.decoded = decoded
        self.device: list[Event] = []
        self.runtime: dict[Any, Event] = {}
        self.sync: list[tuple[float, float]] = []
        self.calls: list[tuple[Event, str]] = []  # synchronising and copy calls, with their kind
        self.ops: dict[Any, Event] = {}
        self.ranges: list[Interval] = []
        self.modules: list[Interval] = []
        self.steps: list[tuple[int, float, float]] = []
        self.sync_names: dict[Any, bool] = {}  # launch call names repeat: each is matched once
        self.tops: list[tuple[float, float, Event]] = []  # outermost ops, found while ops come in start order
        self.in_order = True
        device, ops, tops, kind = self.device, self.ops, self.tops, decoded.event_type
        start, top, top_end = float("-inf"), None, float("-inf")  # the ops starting at `start`: longest
        ev: Event
        for ev in decoded.events:
            if ev.__class__ is not kind or ev.ph != "X":
                continue
            cat = ev.cat
            if cat == "cpu_op":  # the most frequent: numbers are checked where they are used (read_kineto)
                args = ev.args
                if args is not None:
                    ext = args.external_id
                    if ext is not None:
                        ops[ext] = ev
                ts = ev.ts
                end = ts + (ev.dur or 0.0)
                if ts > start:  # as `_outermost` picks them from ops sorted by start, longest first
                    if top is not None:
                        tops.append(top)
                        top_end = top[1]
                    start, top = ts, ((ts, end, ev) if ts > top_end else None)
                elif ts == start:
                    if top is not None and end > top[1]:
                        top = (ts, end, ev)
                else:  # not in start order: `top_ops` sorts them
                    self.in_order = False
            elif cat in _DEVICE:
                device.append(ev)
            elif cat in _RUNTIME:
                self._runtime(ev)
            elif cat == "user_annotation" or cat == "python_function":
                self._range(ev)
        if top is not None:
            tops.append(top)

    def _runtime(self, ev: Event) -> None:
        args = ev.args
        corr = args.correlation if args is not None else None
        if corr is not None:
            self.runtime[corr] = ev
        sync = self.sync_names.get(ev.name)
        if sync is None:
            sync = self.sync_names[ev.name] = _SYNC.search(_name(ev, "")) is not None
        if sync:
            self.sync.append((float(ev.ts), float(ev.dur or 0.0)))
            self.calls.append((ev, "sync"))
        elif _COPY.search(_name(ev, "")) is not None:
            self.calls.append((ev, "copy"))

    def _range(self, ev: Event) -> None:
        name = _name(ev, "")
        module = name.startswith(_MODULE)
        if not module and ev.cat == "python_function":
            return
        ts = float(ev.ts)
        end = ts + float(ev.dur or 0.0)
        if module:
            cls = name[len(_MODULE) :]
            self.modules.append((ts, end, _INSTANCE.sub("", cls) if cls[-1:].isdigit() else cls))
            return
        m = _STEP.match(name)
        if m:
            self.steps.append((int(m.group(1)), ts, end))
        else:
            self.ranges.append((ts, end, name))

    def top_ops(self) -> list[Interval]:
        """Outermost ATen ops (not inside another op), which do not overlap, in start order."""
        spans = self.tops
        if not self.in_order:
            kind = self.decoded.event_type
            ops: list[tuple[float, float, int, Event]] = []
            ev: Event
            for i, ev in enumerate(self.decoded.events):
                if ev.__class__ is kind and ev.ph == "X" and ev.cat == "cpu_op":
                    ops.append((ev.ts, -(ev.ts + (ev.dur or 0.0)), i, ev))
            ops.sort()  # start, then longest first, then trace order
            spans = _outermost(ops)
        return [(s, e, "" if ev.name is UNSET else ev.name) for s, e, ev in spans]


def _outermost(ops: list[tuple[float, float, int, Event]]) -> list[tuple[float, float, Event]]:
    """Each op that starts after the last one picked ended, from (start, -end, order, event) in order."""
    picked = []
    end = float("-inf")
    for start, neg_end, _, ev in ops:
        if start > end:
            end = -neg_end
            picked.append((start, end, ev))
    return picked


def _name(ev: Event, absent: str) -> str:
    return absent if ev.name is UNSET else str(ev.name)


def _activities(b: _Buckets, inputs: Callable[[Any], Any]) -> list[Activity]:
    """One `Activity` per device event, with its launch call (by correlation) and ATen op (by External id)."""
    runtime, ops = b.runtime, b.ops
    graphs: dict[Any, bool] = {}  # by launch call name: is it a graph replay
    names: dict[str, str] = {}  # one string per kernel name: the breakdown's lookups then compare identities
    out: list[Activity] = []
    for ev in b.device:
        name = "?" if ev.name is UNSET else str(ev.name)
        if name not in names:
            _check_name(name)
            names[name] = name
        name = names[name]
        ts, dur = float(ev.ts), float(ev.dur or 0.0)
        if not (0.0 <= dur < _INF and -_INF < ts < _INF):  # NaN fails every comparison
            raise TraceFormatError(
                f"a {ev.cat} event {name[:80]!r} at ts {ts} has duration {dur}: a device activity's "
                "duration is a finite number >= 0",
                "give the trace torch.profiler wrote, unedited",
            )
        act = Activity(name, ts, dur, _DEVICE[ev.cat])
        out.append(act)
        args = ev.args
        if args is None:
            continue
        act.args = args  # its launch record is built once per kernel name (breakdown)
        grid, block = args.grid, args.block
        act.grid = None if grid is UNSET else grid  # checked once per kernel name (breakdown.dims)
        act.block = None if block is UNSET else block
        stream = args.stream
        act.stream = stream if type(stream) is int else None  # anything else is not a stream id
        rt = runtime.get(args.correlation)
        if rt is not None:
            act.launch_ts_us = float(rt.ts)
            act.launch_dur_us = float(rt.dur or 0.0)
            graph = graphs.get(rt.name)
            if graph is None:
                graph = graphs[rt.name] = "GraphLaunch" in _name(rt, "")
            act.graph = graph
        op = ops.get(args.external_id)
        if op is not None:
            name = "None" if op.name is UNSET else str(op.name)
            act.op = names.setdefault(name, name)
            oargs = op.args
            if oargs is not None:
                act.shapes = inputs(oargs.input_dims)
                act.input_types = inputs(oargs.input_type)
    return out


_INF = float("inf")
MAX_NAME_CHARS = 65_536  # a C++ template kernel name runs to a few thousand characters; not 200 MB


def _check_name(name: str) -> None:
    if len(name) > MAX_NAME_CHARS:
        raise TraceFormatError(
            f"a device event's name is {len(name):,} characters long (over {MAX_NAME_CHARS:,})",
            "give the trace torch.profiler wrote, unedited",
        )


def _context(acts: list[Activity], b: _Buckets) -> list[Interval]:
    """Ranges, modules, outer op and phase around each launch call (one pass in launch-time order, with
    cursors over the ranges, modules and outer ops, which are in start order); returns the outer ops."""
    items = sorted((a for a in acts if a.launch_ts_us is not None), key=_LAUNCH)
    rng, mod = _Nest(b.ranges), _Nest(b.modules)
    ranges, modules = bool(rng.items), bool(mod.items)  # a trace often has none of one kind
    tops = b.top_ops()
    # nested ranges: the innermost one fixes the whole stack, so paths and phases are cached by its index
    paths: dict[int, str] = {}
    phases: dict[tuple[int, bool], str | None] = {}
    top_starts = [iv[0] for iv in tops] + [float("inf")]
    i = -1  # the last outer op started by the launch
    for a in items:
        t = a.launch_ts_us or 0.0
        while top_starts[i + 1] <= t:
            i += 1
        r = rng.at(t) if ranges else -1
        m = mod.at(t) if modules else -1
        inside = i >= 0 and tops[i][1] >= t
        if r >= 0:
            a.range = rng.items[r][2]
        if m >= 0:
            path = paths.get(m)
            if path is None:
                path = paths[m] = "/".join(iv[2] for iv in mod.stack(m, t))
            a.module = path
        if inside:
            a.top_op = tops[i][2]
        pkey = (r, inside and tops[i][2].startswith(_BACKWARD_OP))
        if pkey in phases:
            a.phase = phases[pkey]
        else:
            a.phase = phases[pkey] = _phase([iv[2] for iv in rng.stack(r, t)], pkey[1])
    return tops


def _phase(ranges: list[str], backward: bool) -> str | None:
    for name in reversed(ranges):
        low = name.lower()
        for p in _PHASES:
            if p in low:
                return p
    return "backward" if backward else None


def _assign_steps(acts: list[Activity], steps: list[tuple[int, float, float]]) -> None:
    """Each activity to the step whose host range holds its launch call; else the previous activity's."""
    starts = [s[1] for s in steps]
    prev = -1
    for a in sorted(acts, key=_START):
        idx = -1
        if a.launch_ts_us is not None:
            i = bisect.bisect_right(starts, a.launch_ts_us) - 1
            if i >= 0 and a.launch_ts_us <= steps[i][2]:
                idx = i
        a.step = idx if idx >= 0 else prev
        prev = a.step


def read_kineto(path: Path, steps: int | None = None, skip_steps: int = 0) -> Trace:
    """Read a Kineto Chrome trace; steps come from step ranges, else `steps` (whole trace = that many)."""
    decoded = decode_trace(path)
    try:
        return _read(decoded, path, steps, skip_steps)
    except TraceFormatError as exc:  # an event that cannot be true: named with the file
        raise TraceFormatError(f"{path}: {exc.message}", exc.hint) from exc
    except (
        TypeError,
        ValueError,
        AttributeError,
        KeyError,
        OverflowError,  # a 400-digit `ts` or `dur` (msgspec keeps big integers exact) to float
        RecursionError,  # op inputs nested deeper than the decoder goes
    ) as exc:  # foreign data: a field of the wrong type
        raise TraceFormatError(
            f"{path}: an event has a field of an unexpected type or lacks one ({type(exc).__name__}: {exc})",
            "give the trace torch.profiler wrote, unedited",
        ) from exc


def _host_calls(b: _Buckets, tops: list[Interval]) -> list[HostCall]:
    """Synchronising and copy calls with the outer op around each and the device copy each issued."""
    copies = {}
    for ev in b.device:
        if ev.cat != "kernel" and ev.args is not None and ev.args.correlation is not None:
            copies[ev.args.correlation] = ev
    starts = [iv[0] for iv in tops]
    out = []
    for ev, kind in sorted(b.calls, key=lambda c: float(c[0].ts)):
        ts = float(ev.ts)
        call = HostCall(_name(ev, "?"), ts, float(ev.dur or 0.0), kind)
        i = bisect.bisect_right(starts, ts) - 1
        if i >= 0 and tops[i][1] >= ts:
            call.op = tops[i][2]
        dev = copies.get(ev.args.correlation) if ev.args is not None else None
        if dev is not None and dev.args is not None:
            call.device = _name(dev, "?")
            n = dev.args.nbytes
            call.nbytes = n if type(n) is int else None
        out.append(call)
    return out


def _read(decoded: Decoded, path: Path, steps: int | None, skip_steps: int) -> Trace:
    b = _Buckets(decoded)
    acts = _activities(b, decoded.inputs)
    tops = _context(acts, b)
    marks = sorted(b.steps)
    if skip_steps and skip_steps >= len(marks):
        raise InvalidArgumentError(
            f"skip_steps={skip_steps} leaves none of the {len(marks)} step ranges of {path}",
            "skip fewer steps than the trace holds",
        )
    marks = marks[skip_steps:]
    step_host: list[tuple[float, float]] = []
    notes: list[str] = []
    if marks:
        _assign_steps(acts, marks)
        step_host = [(s, e) for _, s, e in marks]
        acts = [a for a in acts if a.step >= 0]
        n = len(marks)
    else:
        n = steps or 1
        notes.append(f"no step ranges in the trace: its whole device activity is taken as {n} step(s)")
    sync = [0.0] * len(step_host)
    starts = [s for s, _ in step_host]
    for ts, dur in b.sync:
        i = bisect.bisect_right(starts, ts) - 1
        if 0 <= i < len(step_host) and ts <= step_host[i][1]:
            sync[i] += dur
    gpu = None
    props = decoded.device_properties
    if isinstance(props, list) and props and isinstance(props[0], dict):
        gpu = props[0].get("name")
    if any(a.graph for a in acts):
        notes.append(
            "kernels launched by CUDA/HIP graph replays are counted (their launch call is the replay)"
        )
    return Trace(
        format="kineto",
        source=str(path),
        method="PyTorch profiler activity trace (CUPTI on NVIDIA, roctracer on AMD), Chrome-trace export",
        steps=n,
        activities=acts,
        step_host=step_host,
        host_sync_us=sync,
        host_calls=_host_calls(b, tops),
        cpu_ops=tops,
        gpu=str(gpu) if gpu else None,
        notes=notes,
    )
