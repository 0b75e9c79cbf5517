"""The in-memory form every reader produces: device activities with what the trace says around them.

Plain dataclasses with slots, not pydantic: a 100,000-kernel trace must read in well under 2 s
(bench/workload_bench.py), and these never leave the package (the breakdown turns them into models).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class LaunchArgs(Protocol):
    """A reader's record of one launch. It becomes a dict only for the one launch per kernel name that the
    breakdown keeps: building one per launch would cost a tenth of a 100,000-kernel read."""

    def launch_record(self) -> dict[str, Any]:
        """The launch's recorded facts (Kineto: registers per thread, shared memory, grid, block, ...)."""
        ...


@dataclass(slots=True)
class Activity:
    """One kernel, copy or fill on the device; times in µs (start on the trace's own clock)."""

    name: str
    start_us: float
    dur_us: float
    kind: str = "kernel"  # kernel | memcpy | memset
    step: int = -1  # index of the step it belongs to, -1 when the trace has no step markers
    launch_ts_us: float | None = None  # host start of the runtime call that launched it
    launch_dur_us: float | None = None
    graph: bool = False  # launched by a CUDA/HIP graph replay
    op: str | None = None  # innermost ATen (cpu_op) op
    top_op: str | None = None  # outermost ATen op
    shapes: Any = None  # the ATen op's input dims as the trace gave them (rendered per kernel name, once)
    range: str | None = None  # innermost record_function / NVTX range (not a step marker)
    module: str | None = None  # nn.Module path, outer/inner
    phase: str | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    stream: int | None = None
    args: LaunchArgs | None = None  # the trace's record of the launch (Kineto kernel args)
    input_types: Any = None  # the ATen op's input types as the trace gave them (`Input type`, record_shapes)


@dataclass(slots=True)
class HostCall:
    """A runtime call on the host that can hold the GPU idle (workload/idle.py): a synchronisation
    (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, a blocking cudaMemcpy) or a copy."""

    name: str
    ts_us: float
    dur_us: float
    kind: str  # sync | copy
    op: str | None = None  # the outermost ATen op around the call
    device: str | None = None  # the device copy/fill it issued (its name says the direction)
    nbytes: int | None = None  # bytes of that copy


@dataclass(slots=True)
class Aggregate:
    """A per-name row of a stats-only format (no timeline): calls and durations in µs."""

    name: str
    calls: int
    total_us: float
    min_us: float
    max_us: float
    median_us: float | None = None


@dataclass
class Trace:
    """What a reader found: activities on a timeline, or per-name aggregates (formats without a timeline)."""

    format: str
    source: str
    method: str
    steps: int
    activities: list[Activity] = field(default_factory=list)
    aggregates: list[Aggregate] = field(default_factory=list)
    timeline: bool = True
    host_sync_us: list[float] = field(default_factory=list)  # per step: host time in synchronising calls
    step_host: list[tuple[float, float]] = field(default_factory=list)  # per step: host range
    host_calls: list[HostCall] = field(default_factory=list)  # synchronisations and copies, by start
    cpu_ops: list[tuple[float, float, str]] = field(default_factory=list)  # outermost ATen ops, by start
    gpu: str | None = None
    notes: list[str] = field(default_factory=list)
