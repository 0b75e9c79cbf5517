"""`read_trace`: pick the reader by the content (JSON object/array vs a CSV header) or by a named format."""

from __future__ import annotations

import gc
from pathlib import Path

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.validation import require_file
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.readers.trace import Trace


def read_trace(path: str | Path, fmt: str = "auto", steps: int | None = None, skip_steps: int = 0) -> Trace:
    """Read a trace with the cyclic garbage collector paused: a 100,000-kernel Kineto trace makes millions
    of acyclic dicts and tuples, and the collections they trigger took half the read (workload_bench.py)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(path, fmt, steps, skip_steps)
    finally:
        if enabled:
            gc.enable()


def _read(path: str | Path, fmt: str, steps: int | None, skip_steps: int) -> Trace:
    p = require_file(path, "trace", "give the path of a recorded trace")
    if p.stat().st_size == 0:
        raise TraceFormatError(f"trace {str(path)!r} is empty", "record it again")
    if fmt == "kineto" or (fmt == "auto" and _looks_json(p)):
        from kernelpilot.workload.readers.kineto import read_kineto

        return read_kineto(p, steps, skip_steps)
    from kernelpilot.workload.readers.tables import read_table

    if skip_steps:
        raise InvalidArgumentError(
            f"skip_steps={skip_steps}: {str(path)!r} is not a PyTorch profiler trace: it has no step ranges",
            "cut the warm-up when recording (a region, rocprofv3/nsys capture ranges); leave skip_steps at 0",
        )
    return read_table(p, fmt, steps)


def _looks_json(p: Path) -> bool:
    from kernelpilot.workload.readers.gzipped import head  # a gzip trace is told by what it inflates to

    return head(p).lstrip()[:1] in (b"{", b"[")
