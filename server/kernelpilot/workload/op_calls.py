"""The ATen op calls behind each kernel of a PyTorch (Kineto) trace, with everything `record_shapes` kept.

Why a second pass over the trace: the fast reader (`readers.kineto`) keeps only the op's input dims and
types, which the breakdown needs for 100,000 kernels in two seconds; `workload isolate` needs one kernel's
op with its strides and concrete scalar arguments, its enclosing ops (a backend-private op such as
`aten::_cudnn_attention_forward` is called through its public caller) and the allocations inside a list op
(`aten::_foreach_sqrt` allocates each member of its TensorList, whose shapes `record_shapes` does not keep).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.workload.errors import TraceFormatError

# `Input type` strings of PyTorch's profiler for tensors -> the torch dtype attribute
TENSOR_TYPES = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "long int": "int64",
    "int": "int32",
    "short int": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
    "c10::Float8_e4m3fn": "float8_e4m3fn",
    "c10::Float8_e5m2": "float8_e5m2",
}
# c10::ScalarType numbers (a dtype argument is recorded as one, e.g. "15") -> the torch dtype attribute
SCALAR_TYPES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    15: "bfloat16",
    23: "float8_e5m2",
    24: "float8_e4m3fn",
}


@dataclass
class OpCall:
    """One recorded ATen op call (a `cpu_op` event) with its recorded inputs."""

    name: str
    ts_us: float
    dur_us: float
    tid: Any
    dims: list[Any]
    types: list[str]
    strides: list[Any]
    concrete: list[str]
    parent: OpCall | None = None
    children: list[OpCall] = field(default_factory=list)

    @property
    def recorded(self) -> bool:
        """The trace recorded this op's inputs (`record_shapes=True`)."""
        return bool(self.types) or bool(self.dims)

    def signature(self) -> tuple[str, str, str]:
        """(op, dims, types) as text: the key kernel rows are split by."""
        return self.name, json.dumps(self.dims, separators=(",", ":")), json.dumps(self.types)


@dataclass
class KernelLaunch:
    """One device kernel with the op that launched it (by External id)."""

    name: str
    dur_us: float
    op: OpCall | None


@dataclass
class TraceOps:
    """What `read_trace_ops` found: each kernel launch with its op, and whether shapes were recorded."""

    source: str
    launches: list[KernelLaunch]
    ops: list[OpCall]
    record_shapes: bool
    by_kernel: dict[str, list[KernelLaunch]] = field(default_factory=dict)


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _op(ev: dict[str, Any]) -> OpCall:
    args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
    assert isinstance(args, dict)
    return OpCall(
        name=str(ev.get("name", "?")),
        ts_us=float(ev.get("ts", 0.0)),
        dur_us=float(ev.get("dur", 0.0) or 0.0),
        tid=ev.get("tid"),
        dims=_list(args.get("Input Dims")),
        types=[str(t) for t in _list(args.get("Input type"))],
        strides=_list(args.get("Input Strides")),
        concrete=[str(c) for c in _list(args.get("Concrete Inputs"))],
    )


def _nest(ops: list[OpCall]) -> None:
    """Parent and children of each op: ops on one thread nest in time (a stack sweep in start order)."""
    by_tid: dict[Any, list[OpCall]] = defaultdict(list)
    for op in ops:
        by_tid[str(op.tid)].append(op)
    for items in by_tid.values():
        items.sort(key=lambda o: (o.ts_us, -o.dur_us))
        stack: list[OpCall] = []
        for op in items:
            while stack and stack[-1].ts_us + stack[-1].dur_us < op.ts_us:
                stack.pop()
            if stack:
                op.parent = stack[-1]
                stack[-1].children.append(op)
            stack.append(op)


def _events(path: Path) -> tuple[list[Any], bool]:
    """The trace's events and its `record_shapes` flag; a file that is no Chrome trace is a typed error."""
    from kernelpilot.foundation.readers import read_bytes
    from kernelpilot.workload.readers.gzipped import maybe_gunzip
    from kernelpilot.workload.readers.kineto_events import MAX_TRACE_BYTES

    try:
        text = maybe_gunzip(read_bytes(path, "trace", MAX_TRACE_BYTES), str(path))
    except KernelpilotError as exc:
        raise TraceFormatError(exc.message, exc.hint) from exc
    try:
        doc = json.loads(text.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise TraceFormatError(
            f"{path} is not a PyTorch profiler trace (JSON): {exc}",
            "give the Chrome trace torch.profiler wrote (export_chrome_trace or tensorboard_trace_handler)",
        ) from exc
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise TraceFormatError(
            f"{path} is JSON but not a Chrome trace (no traceEvents list)",
            "give the Chrome trace torch.profiler wrote (export_chrome_trace or tensorboard_trace_handler)",
        )
    flag = bool(doc.get("record_shapes")) if isinstance(doc, dict) else False
    return events, flag


def read_trace_ops(path: Path) -> TraceOps:
    """Every kernel launch of the trace with the ATen op that launched it, ops nested per thread."""
    events, flag = _events(path)
    ops: list[OpCall] = []
    by_ext: dict[Any, OpCall] = {}
    kernels: list[dict[str, Any]] = []
    try:
        for ev in events:
            if not isinstance(ev, dict) or ev.get("ph") != "X":
                continue
            cat = ev.get("cat")
            if cat == "cpu_op":
                op = _op(ev)
                ops.append(op)
                args = ev.get("args")
                if isinstance(args, dict) and args.get("External id") is not None:
                    by_ext[args["External id"]] = op
            elif cat == "kernel":
                kernels.append(ev)
    except (TypeError, ValueError) as exc:  # a hand-edited trace: a field of the wrong type
        raise TraceFormatError(
            f"{path}: an op event has a field of an unexpected type ({exc})",
            "give the trace torch.profiler wrote, unedited",
        ) from exc
    _nest(ops)
    launches = []
    for ev in kernels:
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        assert isinstance(args, dict)
        launcher = by_ext.get(args.get("External id"))
        dur = ev.get("dur")
        us = float(dur) if isinstance(dur, (int, float)) else 0.0
        launches.append(KernelLaunch(str(ev.get("name", "?")), us, launcher))
    recorded = any(op.recorded for op in ops)  # the header's flag is set in traces of graph replays too
    del flag
    out = TraceOps(str(path), launches, ops, recorded)
    for k in launches:
        out.by_kernel.setdefault(k.name, []).append(k)
    return out
