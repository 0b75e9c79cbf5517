"""The fields of a Kineto Chrome trace that `readers.kineto` reads, decoded from the file in one pass.

Why: the bench's 100,000-kernel trace (bench/workload_bench.py) is 250 MB of JSON in 640,000 events.
msgspec decodes only these fields into slotted structs: other fields are skipped in C, and the ATen op's
input dims and types stay raw JSON until a launch needs them. That takes about a third of the time orjson
takes to build every dict, and the structs free faster. Without msgspec (a bare copy of the tree on a GPU
machine) the json module fills `_JsonObject`s that read the same, slower.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.foundation.readers import read_bytes
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.readers.gzipped import maybe_gunzip

try:
    import msgspec
except ImportError:  # a declared dependency; a bare copy of the tree decodes with json (slower, same result)
    msgspec = None  # type: ignore[assignment]

MAX_TRACE_BYTES = 16 * 2**30  # decoded whole in memory: past this a trace needs a machine of its own

# what a Kineto kernel event records about its launch (CUPTI's kernel record), kept per kernel name
LAUNCH_KEYS = ("registers per thread", "shared memory", "grid", "block", "blocks per SM", "warps per SM")


class _Unset:
    """An absent field where msgspec, and its UNSET, is missing."""

    def __bool__(self) -> bool:
        return False


UNSET: Any = msgspec.UNSET if msgspec is not None else _Unset()


class Decoded(NamedTuple):
    """A decoded trace: its events (items of another type than `event_type` are not objects: skip them),
    the `deviceProperties` list, and `inputs`, which turns an op's recorded input dims/types into values."""

    events: list[Any]
    event_type: type
    device_properties: Any
    inputs: Callable[[Any], Any]


if msgspec is not None:

    class Args(msgspec.Struct, gc=False):
        """An event's `args`: launch ids, the kernel's launch record, the ATen op's recorded inputs."""

        correlation: Any = None
        external_id: Any = msgspec.field(default=None, name="External id")
        stream: Any = None
        grid: Any = UNSET  # UNSET: absent (the launch record keeps only the keys the trace has)
        block: Any = UNSET
        registers: Any = msgspec.field(default=UNSET, name="registers per thread")
        shared: Any = msgspec.field(default=UNSET, name="shared memory")
        blocks_per_sm: Any = msgspec.field(default=UNSET, name="blocks per SM")
        warps_per_sm: Any = msgspec.field(default=UNSET, name="warps per SM")
        input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input Dims")
        input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input type")
        nbytes: Any = msgspec.field(default=None, name="bytes")  # of a device copy (workload/idle.py)

        def launch_record(self) -> dict[str, Any]:
            values = (
                self.registers,
                self.shared,
                self.grid,
                self.block,
                self.blocks_per_sm,
                self.warps_per_sm,
            )
            return {k: v for k, v in zip(LAUNCH_KEYS, values, strict=True) if v is not UNSET}

    class Event(msgspec.Struct, gc=False):
        """One trace event; `name` is UNSET when absent (each use has its own default)."""

        ph: Any = None
        cat: Any = None
        name: Any = UNSET
        ts: Any = 0.0
        dur: Any = None
        args: Args | None = None

    _Item = Event | None | bool | int | float | str | list[Any]

    class _Doc(msgspec.Struct, gc=False):
        traceEvents: list[_Item] | None = None  # the trace's own key
        deviceProperties: Any = None

    _DECODER = msgspec.json.Decoder(_Doc | list[_Item])


def _raw_inputs() -> Callable[[Any], Any]:
    """Raw JSON of op inputs to values, each distinct text decoded once (a step repeats its shapes)."""
    seen: dict[bytes, Any] = {}
    decode = msgspec.json.decode

    def inputs(raw: Any) -> Any:
        if not raw:
            return None
        key = bytes(raw)
        v = seen.get(key, seen)
        if v is seen:
            v = seen[key] = decode(key)
        return v

    return inputs


def _decode_msgspec(text: bytes, source: str) -> Decoded:
    try:
        doc = _DECODER.decode(text)
    except UnicodeDecodeError as exc:  # msgspec checks the UTF-8 of each string as it decodes it
        raise TraceFormatError(
            f"trace {source!r} is not UTF-8 text (byte {exc.start})", "give the trace torch.profiler wrote"
        ) from exc
    except RecursionError as exc:  # msgspec bounds its own nesting depth and raises this past it
        raise TraceFormatError(
            f"trace {source!r} is nested too deeply to be a Chrome trace",
            "give the trace torch.profiler wrote",
        ) from exc
    except msgspec.ValidationError as exc:
        raise _foreign(source, str(exc)) from exc
    except msgspec.DecodeError as exc:
        where = "ends early (truncated)" if "truncated" in str(exc) else "is not JSON"
        raise TraceFormatError(
            f"trace {source!r} {where}: {exc}",
            "record it again and let the profiler finish writing (export_chrome_trace)",
        ) from exc
    if isinstance(doc, list):
        return Decoded(doc, Event, None, _raw_inputs())
    if doc.traceEvents is None:
        raise _foreign(source, "no traceEvents list")
    return Decoded(doc.traceEvents, Event, doc.deviceProperties, _raw_inputs())


def _foreign(source: str, why: str) -> TraceFormatError:
    return TraceFormatError(
        f"{source} is JSON but not a Chrome trace ({why})",
        "give the file torch.profiler's export_chrome_trace wrote (or tensorboard_trace_handler)",
    )


# attribute -> (JSON key, value when absent), as `Event` and `Args` declare them
_FIELDS: dict[str, tuple[str, Any]] = {
    "ph": ("ph", None),
    "cat": ("cat", None),
    "name": ("name", UNSET),
    "ts": ("ts", 0.0),
    "dur": ("dur", None),
    "args": ("args", None),
    "correlation": ("correlation", None),
    "external_id": ("External id", None),
    "stream": ("stream", None),
    "grid": ("grid", UNSET),
    "block": ("block", UNSET),
    "input_dims": ("Input Dims", None),
    "input_type": ("Input type", None),
    "nbytes": ("bytes", None),
}


class _JsonObject(dict[str, Any]):
    """Without msgspec: a JSON object whose fields read as the attributes of `Event` and `Args`."""

    def __getattr__(self, attr: str) -> Any:
        try:
            key, default = _FIELDS[attr]
        except KeyError:
            raise AttributeError(attr) from None
        return self.get(key, default)

    def launch_record(self) -> dict[str, Any]:
        return {k: self[k] for k in LAUNCH_KEYS if k in self}


def _decode_json(text: bytes, source: str) -> Decoded:
    try:
        doc = json.loads(text, object_hook=_JsonObject)
    except RecursionError as exc:
        raise TraceFormatError(
            f"trace {source!r} is nested too deeply", "give the trace torch.profiler wrote"
        ) from exc
    except json.JSONDecodeError as exc:
        where = "ends early (truncated)" if exc.pos >= len(text) - 2 else f"is not JSON at byte {exc.pos}"
        raise TraceFormatError(
            f"trace {source!r} {where}: {exc.msg}",
            "record it again and let the profiler finish writing (export_chrome_trace)",
        ) from exc
    if isinstance(doc, _JsonObject) and isinstance(doc.get("traceEvents"), list):
        return Decoded(doc["traceEvents"], _JsonObject, doc.get("deviceProperties"), lambda v: v)
    if isinstance(doc, list):
        return Decoded(doc, _JsonObject, None, lambda v: v)
    raise _foreign(source, "no traceEvents list")


def decode_trace(path: Path) -> Decoded:
    """Read and decode the file; a truncated, non-JSON or foreign file is a typed error naming why."""
    # read, not mmap: a file truncated while a mapped copy is decoded faults (SIGBUS) and would take
    # the MCP server down with it; the copy costs about 0.1 s on a 250 MB trace. The guarded read refuses
    # a folder, FIFO, device (a link to /dev/zero) or link loop before reading a byte.
    try:
        text = read_bytes(path, "trace", MAX_TRACE_BYTES)
    except KernelpilotError as exc:
        raise TraceFormatError(exc.message, exc.hint) from exc
    text = maybe_gunzip(text, str(path))  # tensorboard_trace_handler(use_gzip=True) writes .json.gz
    if text.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM (an editor's save): the JSON starts after it
        text = text[3:]
    if msgspec is None:
        return _decode_json(text, str(path))
    return _decode_msgspec(text, str(path))
