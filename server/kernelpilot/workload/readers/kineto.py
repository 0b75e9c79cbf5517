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
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.workload.errors import TraceFormatError

try:
    from orjson import loads as _loads
except ImportError:  # orjson is a declared dependency; a bare environment (a GPU box's copy) parses slower
    _loads = json.loads  # type: ignore[assignment]
from kernelpilot.workload.readers.trace import Activity, Trace

_DEVICE = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
_RUNTIME = ("cuda_runtime", "cuda_driver")
_STEP = re.compile(r"^(?:kernelpilot\.step#|ProfilerStep#)(\d+)$")
_MODULE = "nn.Module: "
_INSTANCE = re.compile(r"_\d+$")  # with_stack names modules "Linear_0"
_SYNC = re.compile(r"(?:Synchronize|^(?:cuda|hip)Memcpy(?!Async)|^cuMemcpy(?!Async)|^cuStreamSynchronize)")
_PHASES = ("prefill", "decode", "backward", "forward", "optimizer")

Interval = tuple[float, float, str]


def load_json(path: Path) -> Any:
    """Parse the file, turning a truncated or non-JSON file into a typed error naming where it broke."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"cannot read trace {str(path)!r}: {exc}", "check the path") from exc
    try:
        return _loads(text)
    except json.JSONDecodeError as exc:
        where = "ends early (truncated)" if exc.pos >= len(text) - 2 else f"is not JSON at byte {exc.pos}"
        raise TraceFormatError(
            f"trace {str(path)!r} {where}: {exc.msg}",
            "record it again and let the profiler finish writing (export_chrome_trace)",
        ) from exc


class _Enclosing:
    """Innermost intervals around increasing query times (one sweep; intervals must nest, as ranges on one
    thread do)."""

    def __init__(self, intervals: list[Interval]) -> None:
        self.items = sorted(intervals, key=lambda i: (i[0], -i[1]))
        self.pos = 0
        self.stack: list[Interval] = []

    def at(self, t: float) -> list[Interval]:
        while self.pos < len(self.items) and self.items[self.pos][0] <= t:
            item = self.items[self.pos]
            while self.stack and self.stack[-1][1] < item[0]:  # closed before this one opened
                self.stack.pop()
            self.stack.append(item)
            self.pos += 1
        while self.stack and self.stack[-1][1] < t:
            self.stack.pop()
        return [iv for iv in self.stack if iv[1] >= t]


def _events(doc: Any, source: str) -> list[dict[str, Any]]:
    if isinstance(doc, list):
        events = doc
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
    else:
        raise TraceFormatError(
            f"{source} is JSON but not a Chrome trace (no traceEvents list)",
            "give the file torch.profiler's export_chrome_trace wrote (or tensorboard_trace_handler)",
        )
    return events


class _Buckets:
    """Events sorted by category in one pass (a plain loop: this is the hot path of a 100,000-kernel read)."""

    def __init__(self, events: Iterable[Any]) -> None:
        self.device: list[dict[str, Any]] = []
        self.runtime: dict[Any, dict[str, Any]] = {}
        self.sync: list[tuple[float, float]] = []
        self.ops: dict[Any, dict[str, Any]] = {}
        self.op_iv: list[Interval] = []
        self.ranges: list[Interval] = []
        self.modules: list[Interval] = []
        self.steps: list[tuple[int, float, float]] = []
        device, runtime, ops, op_iv = self.device, self.runtime, self.ops, self.op_iv
        for ev in events:
            if type(ev) is not dict or ev.get("ph") != "X":
                continue
            cat = ev.get("cat")
            if cat == "cpu_op":  # the most frequent: numbers are checked where they are used (read_kineto)
                args = ev.get("args")
                if args:
                    ext = args.get("External id")
                    if ext is not None:
                        ops[ext] = ev
                ts = ev.get("ts", 0.0)
                op_iv.append((ts, ts + (ev.get("dur") or 0.0), ev.get("name", "")))
            elif cat in _DEVICE:
                device.append(ev)
            elif cat in _RUNTIME:
                corr = (ev.get("args") or {}).get("correlation")
                if corr is not None:
                    runtime[corr] = ev
                if _SYNC.search(str(ev.get("name", ""))):
                    self.sync.append((float(ev.get("ts", 0.0)), float(ev.get("dur", 0.0) or 0.0)))
            elif cat == "user_annotation" or cat == "python_function":
                self._range(ev)

    def _range(self, ev: dict[str, Any]) -> None:
        name = str(ev.get("name", ""))
        module = name.startswith(_MODULE)
        if not module and ev.get("cat") == "python_function":
            return
        ts = float(ev.get("ts", 0.0))
        end = ts + float(ev.get("dur", 0.0) or 0.0)
        if module:
            cls = name[len(_MODULE) :]
            self.modules.append((ts, end, _INSTANCE.sub("", cls) if cls[-1:].isdigit() else cls))
            return
        m = _STEP.match(name)
        if m:
            self.steps.append((int(m.group(1)), ts, end))
        else:
            self.ranges.append((ts, end, name))

    def top_ops(self) -> tuple[list[float], list[Interval]]:
        """Outermost ATen ops (not inside another op), which do not overlap: found by bisection."""
        top: list[Interval] = []
        end = float("-inf")
        for iv in sorted(self.op_iv, key=lambda i: (i[0], -i[1])):
            if iv[0] > end:
                top.append(iv)
                end = iv[1]
        return [iv[0] for iv in top], top


def _activity(ev: dict[str, Any], b: _Buckets) -> Activity:
    args = ev.get("args") or {}
    act = Activity(
        name=str(ev.get("name", "?")),
        start_us=float(ev.get("ts", 0.0)),
        dur_us=float(ev.get("dur", 0.0) or 0.0),
        kind=_DEVICE[ev["cat"]],
        grid=args.get("grid"),  # checked once per kernel name (breakdown.dims), not per launch
        block=args.get("block"),
        stream=args.get("stream"),
        args=args,
    )
    rt = b.runtime.get(args.get("correlation"))
    if rt is not None:
        act.launch_ts_us = float(rt.get("ts", 0.0))
        act.launch_dur_us = float(rt.get("dur", 0.0) or 0.0)
        act.graph = "GraphLaunch" in str(rt.get("name", ""))
    op = b.ops.get(args.get("External id")) if "External id" in args else None
    if op is not None:
        act.op = str(op.get("name"))
        act.op_args = op.get("args") or None
        act.shapes = act.op_args.get("Input Dims") if act.op_args else None
    return act


def _context(acts: list[Activity], b: _Buckets) -> None:
    """Ranges, modules, outer op and phase around each launch call (one sweep in launch-time order)."""
    items = sorted((a for a in acts if a.launch_ts_us is not None), key=lambda a: a.launch_ts_us or 0.0)
    rng, mod = _Enclosing(b.ranges), _Enclosing(b.modules)
    starts, tops = b.top_ops()
    backward = {iv for iv in tops if iv[2].startswith("autograd::engine::evaluate_function")}
    # nested ranges: the innermost one fixes the whole stack, so paths and phases are cached by its identity
    paths: dict[int, str] = {}
    phases: dict[tuple[int, bool], str | None] = {}
    for a in items:
        t = a.launch_ts_us or 0.0
        r, m = rng.at(t), mod.at(t)
        i = bisect.bisect_right(starts, t) - 1
        top = tops[i] if i >= 0 and tops[i][1] >= t else None
        if r:
            a.range = r[-1][2]
        if m:
            key = id(m[-1])
            path = paths.get(key)
            if path is None:
                path = paths[key] = "/".join(iv[2] for iv in m)
            a.module = path
        if top is not None:
            a.top_op = top[2]
        pkey = (id(r[-1]) if r else 0, top in backward)
        if pkey in phases:
            a.phase = phases[pkey]
        else:
            a.phase = phases[pkey] = _phase([iv[2] for iv in r], pkey[1])


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
    for a in sorted(acts, key=lambda x: x.start_us):
        idx = -1
        if a.launch_ts_us is not None:
            i = bisect.bisect_right(starts, a.launch_ts_us) - 1
            if i >= 0 and a.launch_ts_us <= steps[i][2]:
                idx = i
        a.step = idx if idx >= 0 else prev
        prev = a.step


def read_kineto(path: Path, steps: int | None = None, skip_steps: int = 0) -> Trace:
    """Read a Kineto Chrome trace; steps come from step ranges, else `steps` (whole trace = that many)."""
    doc = load_json(path)
    try:
        return _read(doc, path, steps, skip_steps)
    except (
        TypeError,
        ValueError,
        AttributeError,
        KeyError,
    ) as exc:  # foreign data: a field of the wrong type
        raise TraceFormatError(
            f"{path}: an event has a field of an unexpected type or lacks one ({type(exc).__name__}: {exc})",
            "give the trace torch.profiler wrote, unedited",
        ) from exc


def _read(doc: Any, path: Path, steps: int | None, skip_steps: int) -> Trace:
    b = _Buckets(_events(doc, str(path)))
    acts = [_activity(ev, b) for ev in b.device]
    _context(acts, b)
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
    if isinstance(doc, dict):
        props = doc.get("deviceProperties")
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
        gpu=str(gpu) if gpu else None,
        notes=notes,
    )
