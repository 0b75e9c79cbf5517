"""A simulated `torch.cuda` for the timing loops, where no GPU is present (the hardware edge).

The model is the one launch gaps come from: the host enqueues work at host times (each API call costs
`host_cost_us`), and the GPU runs each queued item at max(when the GPU is free, when the host enqueued it).
Events take the GPU time at which the stream reaches them. So an unheld event pair around a short kernel
reads the host's launch cost, and a hold that ends before the host finishes enqueueing shows up in
`Event.query()`, exactly as on a device. Durations are deterministic, so tests can assert exact values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Sim:
    host_cost_us: float = 5.0
    cycles_per_us: float = 1000.0
    host_us: float = 0.0
    gpu_free_us: float = 0.0
    capturing: list[float] | None = None
    launches: int = 0
    fail_after: int | None = None  # raise a device error at this launch count
    has_sleep: bool = True
    capture_fails: bool = False
    jitter: Callable[[int], float] = field(default=lambda i: 0.0)

    def enqueue(self, duration_us: float) -> float:
        """Host enqueues an item; returns the GPU time it starts at."""
        self.host_us += self.host_cost_us
        start = max(self.gpu_free_us, self.host_us)
        self.gpu_free_us = start + duration_us
        return start


class Event:
    def __init__(self, sim: Sim, enable_timing: bool = False) -> None:
        self.sim = sim
        self.t: float | None = None

    def record(self, stream: Any = None) -> None:
        self.t = self.sim.enqueue(0.0)

    def query(self) -> bool:
        return self.t is not None and self.t <= self.sim.host_us

    def synchronize(self) -> None:
        assert self.t is not None
        self.sim.host_us = max(self.sim.host_us, self.t)

    def elapsed_time(self, end: Event) -> float:
        assert self.t is not None and end.t is not None
        return (end.t - self.t) / 1000.0  # ms, as torch


class Graph:
    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.durations: list[float] = []

    def replay(self) -> None:
        self.sim.enqueue(sum(self.durations))


class Buffer:
    def __init__(self, sim: Sim, nbytes: int) -> None:
        self.sim = sim
        self.nbytes = nbytes

    def zero_(self) -> None:
        self.sim.enqueue(self.nbytes / 3e6)  # ~3 TB/s

    def max(self) -> None:
        self.sim.enqueue(self.nbytes / 3e6)


class _Props:
    L2_cache_size = 50 * 1024 * 1024


class _Cuda:
    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        if sim.has_sleep:
            self._sleep = self._sleep_impl

    def _sleep_impl(self, cycles: int) -> None:
        self.sim.enqueue(cycles / self.sim.cycles_per_us)

    def Event(self, enable_timing: bool = False) -> Event:
        return Event(self.sim, enable_timing)

    def synchronize(self) -> None:
        self.sim.host_us = max(self.sim.host_us, self.sim.gpu_free_us)

    def current_stream(self) -> object:
        return self

    def Stream(self) -> _Cuda:
        return self

    def wait_stream(self, other: object) -> None:
        pass

    @contextmanager
    def stream(self, s: object) -> Iterator[None]:
        yield

    def CUDAGraph(self) -> Graph:
        return Graph(self.sim)

    @contextmanager
    def graph(self, g: Graph) -> Iterator[None]:
        self.sim.capturing = g.durations
        try:
            if self.sim.capture_fails:
                raise RuntimeError("operation not permitted when stream is capturing")
            yield
        finally:
            self.sim.capturing = None

    def get_device_properties(self, i: int) -> _Props:
        return _Props()

    def current_device(self) -> int:
        return 0

    def get_device_name(self) -> str:
        return "Simulated GPU"

    def is_available(self) -> bool:
        return True


class FakeTorch:
    uint8 = "uint8"

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.cuda = _Cuda(sim)

    def empty(self, n: int, dtype: Any = None, device: str = "cuda") -> Buffer:
        return Buffer(self.sim, n)

    def kernel(self, duration_us: float) -> Callable[[], None]:
        """A closure that launches one kernel of `duration_us` (plus the sim's jitter)."""

        def launch() -> None:
            sim = self.sim
            sim.launches += 1
            if sim.fail_after is not None and sim.launches > sim.fail_after:
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            d = duration_us + sim.jitter(sim.launches)
            if sim.capturing is not None:
                sim.capturing.append(d)
                return
            sim.enqueue(d)

        return launch
