"""The GPU's SM clock, power, temperature and clock-event (throttle) reasons read *while* work is timed.

Why: a compute-bound kernel at the power limit runs at whatever SM clock the power budget allows. Two
`kernelpilot time` runs of one 8192^3 bf16 GEMM on an H100 three minutes apart differed by 10 % while the
clocks read before and after both said 1980 MHz (issue 24): readings around a measurement say nothing
about the state during it. Here a sampler thread reads the GPU every few milliseconds during the timed
work (NVML through nvidia-ml-py on NVIDIA, amdsmi on AMD); each timed sample (or paired block) is tagged
with the readings taken while it ran, and a sample taken under a power or thermal slowdown that pulled the
SM clock below a threshold is dropped and redone after a bounded wait for recovery, as NVBench does
(`--throttle-threshold`, default 75 % of the default SM clock; `--throttle-recovery-delay`, default
0.05 s: NVIDIA/nvbench docs/cli_help.md and the defaults mirrored in microsoft/superbenchmark's nvbench
wrapper). When the slowdown lasts the whole measurement (a GEMM held at the power cap) it cannot be waited
out: the samples are kept and the evidence says the GPU could not hold its clock for this kernel.

Owns: the readings (`Reading`), their sources (`NvmlSource`, `AmdSmiSource`, `ReplaySource`), the
`ClockSampler` thread, tagging a time window (`tag`), the drop rule (`ThrottlePolicy.why_dropped`) and the
summary (`evidence` -> `models.ClockEvidence`). It never changes a clock, a power limit or any other
setting of the GPU. It does not time anything (`gpu`, `paired` do).
"""

from __future__ import annotations

import bisect
import importlib
import importlib.util
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernelpilot.timing.models import ClockEvidence

# NVML clocks-event reason bits (nvml.h, nvmlClocksEventReason*; nvidia-smi "Clocks Event Reasons").
REASON_NAMES: dict[int, str] = {
    0x1: "gpu idle",
    0x2: "applications clocks setting",
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake slowdown",
    0x100: "display clock setting",
}
# Reasons that pull the clock below what the card would otherwise run: power and thermal limits.
SLOWDOWN_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
NVBENCH_THRESHOLD = 0.75  # NVBench --throttle-threshold default (75 % of the default SM clock)
NVBENCH_RECOVERY_S = 0.05  # NVBench --throttle-recovery-delay default
DEFAULT_PERIOD_S = 0.005  # one reading every 5 ms: a 1.5 ms GEMM block of 4 launches sees one or two


@dataclass(frozen=True)
class Reading:
    """One reading of the GPU: when (time.perf_counter seconds), SM clock, power, temperature, reasons."""

    t_s: float
    sm_mhz: float
    power_w: float | None = None
    temp_c: float | None = None
    reasons: int | None = None  # NVML clocks-event reasons mask; None where the source cannot tell

    def to_list(self) -> list[float | int | None]:
        return [self.t_s, self.sm_mhz, self.power_w, self.temp_c, self.reasons]

    @classmethod
    def from_list(cls, row: Sequence[Any]) -> Reading:
        t, sm, p, temp, reasons = (list(row) + [None] * 5)[:5]
        return cls(float(t), float(sm), p, temp, None if reasons is None else int(reasons))


def reason_names(mask: int | None) -> list[str]:
    if not mask:
        return []
    return [name for bit, name in REASON_NAMES.items() if mask & bit]


class ClockSource(Protocol):
    """What the sampler reads from: one GPU through a vendor library (or a recorded trace)."""

    name: str
    device: str
    max_sm_mhz: float | None
    power_limit_w: float | None

    def read(self) -> Reading: ...

    def close(self) -> None: ...


def _try(fn: Callable[[], Any], errors: tuple[type[BaseException], ...]) -> Any:
    """A field the device does not support reads as None (the reading keeps its other fields)."""
    try:
        return fn()
    except errors:
        return None


def _by_uuid(nvml: Any, key: str) -> Any:
    try:
        return nvml.nvmlDeviceGetHandleByUUID(key)
    except nvml.NVMLError:
        return None  # not this UUID spelling: the caller tries the next, then the index


class NvmlSource:
    """NVML through nvidia-ml-py (`pynvml`), the binding NVIDIA keeps (nvidia-ml-py on PyPI)."""

    name = "nvml"

    def __init__(self, nvml: Any, handle: Any, device: str) -> None:
        self.nvml = nvml
        self.handle = handle
        self.device = device
        err = nvml.NVMLError
        self._errors: tuple[type[BaseException], ...] = (err,)
        self.max_sm_mhz = _try(
            lambda: float(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)), (err,)
        )
        limit = _try(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle), (err,))
        self.power_limit_w = None if limit is None else float(limit) / 1000.0
        get = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = get or nvml.nvmlDeviceGetCurrentClocksThrottleReasons

    @classmethod
    def open(cls, uuid: str | None, index: int) -> NvmlSource | None:
        """The NVML handle of the GPU torch uses (by UUID, else by index); None without NVML."""
        if importlib.util.find_spec("pynvml") is None:
            return None
        nvml: Any = importlib.import_module("pynvml")
        try:
            nvml.nvmlInit()
        except nvml.NVMLError:
            return None
        handle = None
        keys = [] if not uuid else [uuid] if uuid.startswith("GPU-") else [f"GPU-{uuid}", uuid]
        for key in keys:
            handle = _by_uuid(nvml, key)
            if handle is not None:
                break
        if handle is None:
            handle = _try(lambda: nvml.nvmlDeviceGetHandleByIndex(index), (nvml.NVMLError,))
        if handle is None:
            return None
        name = _try(lambda: nvml.nvmlDeviceGetName(handle), (nvml.NVMLError,))
        name = name.decode() if isinstance(name, bytes) else str(name)
        return cls(nvml, handle, name)

    def read(self) -> Reading:
        nvml, h, errs = self.nvml, self.handle, self._errors
        t0 = time.perf_counter()
        sm = _try(lambda: float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)), errs)
        mw = _try(lambda: nvml.nvmlDeviceGetPowerUsage(h), errs)
        temp = _try(lambda: float(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)), errs)
        reasons = _try(lambda: int(self._reasons(h)), errs)
        t1 = time.perf_counter()
        return Reading(
            (t0 + t1) / 2, sm if sm is not None else float("nan"),
            None if mw is None else float(mw) / 1000.0, temp, reasons,
        )  # fmt: skip

    def close(self) -> None:
        _try(self.nvml.nvmlShutdown, self._errors)


class AmdSmiSource:
    """amdsmi (ROCm's Python binding of the AMD SMI library): GFX clock, socket power, hotspot temperature.

    amdsmi reports throttle status in its own bit layout; it is not mapped to NVML's reasons, so readings
    carry `reasons=None` and the drop rule judges AMD samples by the clock alone."""

    name = "amdsmi"

    def __init__(self, amdsmi: Any, handle: Any, device: str) -> None:
        self.amdsmi = amdsmi
        self.handle = handle
        self.device = device
        self._errors: tuple[type[BaseException], ...] = (amdsmi.AmdSmiException,)
        info = _try(lambda: amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX), self._errors)
        self.max_sm_mhz = float(info["max_clk"]) if isinstance(info, dict) and info.get("max_clk") else None
        power = _try(lambda: amdsmi.amdsmi_get_power_info(handle), self._errors)
        limit = power.get("power_limit") if isinstance(power, dict) else None
        self.power_limit_w = float(limit) if isinstance(limit, (int, float)) and limit > 0 else None

    @classmethod
    def open(cls, index: int) -> AmdSmiSource | None:
        if importlib.util.find_spec("amdsmi") is None:
            return None
        amdsmi: Any = importlib.import_module("amdsmi")
        try:
            amdsmi.amdsmi_init()
            handles = amdsmi.amdsmi_get_processor_handles()
        except amdsmi.AmdSmiException:
            return None
        if not 0 <= index < len(handles):
            return None
        return cls(amdsmi, handles[index], f"amdsmi processor {index}")

    def read(self) -> Reading:
        a, h, errs = self.amdsmi, self.handle, self._errors
        t0 = time.perf_counter()
        clk = _try(lambda: a.amdsmi_get_clock_info(h, a.AmdSmiClkType.GFX), errs)
        power = _try(lambda: a.amdsmi_get_power_info(h), errs)
        temp = _try(
            lambda: a.amdsmi_get_temp_metric(
                h, a.AmdSmiTemperatureType.HOTSPOT, a.AmdSmiTemperatureMetric.CURRENT
            ),
            errs,
        )
        t1 = time.perf_counter()
        sm = float(clk["clk"]) if isinstance(clk, dict) and "clk" in clk else float("nan")
        watts = power.get("current_socket_power") if isinstance(power, dict) else None
        return Reading(
            (t0 + t1) / 2, sm, float(watts) if isinstance(watts, (int, float)) else None,
            float(temp) if isinstance(temp, (int, float)) else None, None,
        )  # fmt: skip

    def close(self) -> None:
        _try(self.amdsmi.amdsmi_shut_down, self._errors)


class ReplaySource:
    """Recorded readings replayed in order (tests on a machine without a GPU), stamped with the time now."""

    name = "replay"

    def __init__(
        self, readings: Sequence[Reading], *, max_sm_mhz: float | None, power_limit_w: float | None = None,
        device: str = "recorded trace",
    ) -> None:  # fmt: skip
        if not readings:
            raise ValueError("a replay needs at least one reading")
        self.readings = list(readings)
        self.max_sm_mhz = max_sm_mhz
        self.power_limit_w = power_limit_w
        self.device = device
        self.i = 0

    def read(self) -> Reading:
        r = self.readings[min(self.i, len(self.readings) - 1)]
        self.i += 1
        return Reading(time.perf_counter(), r.sm_mhz, r.power_w, r.temp_c, r.reasons)

    def close(self) -> None:
        return None


def open_source(torch: Any | None) -> ClockSource | None:
    """The source for the GPU torch uses now: NVML on NVIDIA, amdsmi on AMD (ROCm torch), else None."""
    if torch is None:
        return None
    index = int(torch.cuda.current_device())
    props = torch.cuda.get_device_properties(index)
    if getattr(getattr(torch, "version", None), "hip", None):
        return AmdSmiSource.open(index)
    uuid = getattr(props, "uuid", None)
    return NvmlSource.open(str(uuid) if uuid is not None else None, index)


def open_visible(env: dict[str, str]) -> ClockSource | None:
    """NVML for the first GPU a command started with `env` sees (CUDA_VISIBLE_DEVICES: index or UUID)."""
    first = env.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    if first.isdigit():
        return NvmlSource.open(None, int(first))
    return NvmlSource.open(first, 0) if first.startswith("GPU-") else None


class ClockSampler:
    """A daemon thread reading `source` every `period_s` while timed work runs (a context manager).

    NVML and amdsmi calls are ctypes calls, which release the GIL, so the thread barely delays the host's
    enqueueing; what it costs shows as held-stream retries (`gpu.run_held`), never in a GPU time."""

    def __init__(self, source: ClockSource | None, period_s: float = DEFAULT_PERIOD_S) -> None:
        self.source = source
        self.period_s = period_s
        self._readings: list[Reading] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._new = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self.failed: str | None = None  # why the reader stopped early, if it did

    @property
    def available(self) -> bool:
        return self.source is not None

    def __enter__(self) -> ClockSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.source is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="kernelpilot-clocks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assert self.source is not None
        while not self._stop.is_set():
            try:
                r = self.source.read()
            except Exception as exc:  # a vendor library failing mid-run: keep the readings so far, stop
                self.failed = f"{type(exc).__name__}: {exc}"
                return
            with self._new:
                self._readings.append(r)
                self._new.notify_all()
            self._stop.wait(self.period_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def readings(self) -> list[Reading]:
        with self._lock:
            return list(self._readings)

    def next_reading(self, after: int, timeout_s: float) -> Reading | None:
        """The first reading with index >= `after`, waiting at most `timeout_s` for it."""
        with self._new:
            self._new.wait_for(lambda: len(self._readings) > after or self._stop.is_set(), timeout_s)
            return self._readings[after] if len(self._readings) > after else None

    def count(self) -> int:
        with self._lock:
            return len(self._readings)


@dataclass
class Tag:
    """What the GPU did while one timed window ran: the readings inside it (and the one in effect at its
    start)."""

    readings: int
    sm_mhz_min: float | None = None
    sm_mhz_max: float | None = None
    power_w_max: float | None = None
    temp_c_max: float | None = None
    reasons: int | None = None  # OR of every reading's mask; None when no reading carried one


def window(readings: Sequence[Reading], t0: float, t1: float) -> list[Reading]:
    """Readings taken in [t0, t1], plus the last one before t0 (the state in effect when it began).

    `readings` are in time order (as the sampler appends them)."""
    times = [r.t_s for r in readings]
    lo = bisect.bisect_left(times, t0)
    hi = bisect.bisect_right(times, t1)
    return list(readings[max(0, lo - 1) : hi])


def tag(readings: Sequence[Reading], t0: float, t1: float) -> Tag:
    rs = [r for r in window(readings, t0, t1) if r.sm_mhz == r.sm_mhz]  # NaN: clock unreadable
    if not rs:
        return Tag(0)
    masks = [r.reasons for r in rs if r.reasons is not None]
    powers = [r.power_w for r in rs if r.power_w is not None]
    temps = [r.temp_c for r in rs if r.temp_c is not None]
    reasons = 0
    for m in masks:
        reasons |= m
    return Tag(
        readings=len(rs),
        sm_mhz_min=min(r.sm_mhz for r in rs),
        sm_mhz_max=max(r.sm_mhz for r in rs),
        power_w_max=max(powers) if powers else None,
        temp_c_max=max(temps) if temps else None,
        reasons=reasons if masks else None,
    )


def inside(readings: Sequence[Reading], spans: Sequence[tuple[float, float]]) -> list[Reading]:
    """Readings taken inside any of the spans (each reading once), in time order."""
    times = [r.t_s for r in readings]
    keep: set[int] = set()
    for a, b in spans:
        keep.update(range(bisect.bisect_left(times, a), bisect.bisect_right(times, b)))
    return [readings[i] for i in sorted(keep)]


@dataclass
class ThrottlePolicy:
    """When a timed window is dropped, and how long to wait for the GPU to recover.

    A window is dropped when its lowest SM clock is under `threshold` x the reference clock (the GPU's
    rated maximum) *and* a power or thermal slowdown reason was active in it (or the source cannot report
    reasons). A low clock with no slowdown reason (idle, application clocks) is not a throttle."""

    threshold: float = NVBENCH_THRESHOLD
    recovery_delay_s: float = NVBENCH_RECOVERY_S
    recovery_budget_s: float = 5.0  # all waits of one measurement together
    persistent_fraction: float = 0.5  # more than this share of a round throttled: cannot be waited out

    def why_dropped(self, t: Tag, reference_mhz: float | None) -> str | None:
        if t.readings == 0 or t.sm_mhz_min is None or not reference_mhz:
            return None
        if t.sm_mhz_min >= self.threshold * reference_mhz:
            return None
        slow = (
            reason_names((t.reasons or 0) & SLOWDOWN_BITS) if t.reasons is not None else ["reasons unknown"]
        )
        if not slow:
            return None
        return (
            f"SM clock {t.sm_mhz_min:.0f} MHz < {self.threshold:.0%} of {reference_mhz:.0f} MHz "
            f"({', '.join(slow)})"
        )

    def recovered(self, r: Reading, reference_mhz: float | None) -> bool:
        if not reference_mhz or r.sm_mhz != r.sm_mhz:
            return True
        if r.sm_mhz >= self.threshold * reference_mhz:
            return True
        return r.reasons is not None and not (r.reasons & SLOWDOWN_BITS)


def wait_for_recovery(
    sampler: ClockSampler, policy: ThrottlePolicy, reference_mhz: float | None, budget_s: float
) -> tuple[bool, float]:
    """Wait (at most `budget_s`) until a fresh reading shows the GPU out of its slowdown, then the recovery
    delay; (recovered, seconds waited). The GPU is idle meanwhile, which is what lets it cool."""
    start = time.perf_counter()
    deadline = start + max(0.0, budget_s)
    n = sampler.count()
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return False, time.perf_counter() - start
        r = sampler.next_reading(n, left)
        if r is None:
            return False, time.perf_counter() - start
        n += 1
        if policy.recovered(r, reference_mhz):
            time.sleep(min(policy.recovery_delay_s, max(0.0, deadline - time.perf_counter())))
            return True, time.perf_counter() - start


@dataclass
class DropLog:
    """Windows dropped for throttling and the waits for recovery, as the measurement went."""

    dropped: list[str] = field(default_factory=list)
    waits: int = 0
    waited_s: float = 0.0
    persistent: bool = False  # the slowdown outlasted the waits: samples kept, evidence says so


def _fmt_reasons(fractions: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0%}" for k, v in sorted(fractions.items(), key=lambda kv: -kv[1]))


def evidence(
    sampler: ClockSampler,
    spans: Sequence[tuple[float, float]],
    log: DropLog,
    policy: ThrottlePolicy,
) -> ClockEvidence:
    """The clock evidence of a measurement: readings inside the timed spans, reasons seen, drops, verdict."""
    src = sampler.source
    if src is None:
        return ClockEvidence(
            source="none",
            note="no NVML (nvidia-ml-py) or amdsmi for this GPU: clocks were not read during the run",
            threshold=policy.threshold,
            dropped=len(log.dropped),
        )
    all_r = sampler.readings()
    rs = [r for r in inside(all_r, spans) if r.sm_mhz == r.sm_mhz]
    sm = [r.sm_mhz for r in rs]
    masks = [r.reasons for r in rs if r.reasons is not None]
    counts: dict[str, int] = {}
    for m in masks:
        for name in reason_names(m):
            counts[name] = counts.get(name, 0) + 1
    fractions = {k: v / len(masks) for k, v in counts.items()} if masks else {}
    slowed = [m for m in masks if m & SLOWDOWN_BITS]
    ref = src.max_sm_mhz
    med = statistics.median(sm) if sm else None
    held: bool | None = None
    if sm and ref:
        held = not slowed and med is not None and med >= 0.97 * ref
    why: dict[str, int] = {}
    for d in log.dropped:
        why[d] = why.get(d, 0) + 1
    powers = [r.power_w for r in rs if r.power_w is not None]
    temps = [r.temp_c for r in rs if r.temp_c is not None]
    ev = ClockEvidence(
        source=src.name,
        device=src.device,
        period_ms=sampler.period_s * 1000.0,
        readings=len(rs),
        sm_mhz_rated_max=ref,
        power_limit_w=src.power_limit_w,
        sm_mhz_min=min(sm) if sm else None,
        sm_mhz_median=med,
        sm_mhz_max=max(sm) if sm else None,
        power_w_median=statistics.median(powers) if powers else None,
        power_w_max=max(powers) if powers else None,
        temp_c_max=max(temps) if temps else None,
        reasons_seen=fractions,
        slowdown_fraction=len(slowed) / len(masks) if masks else None,
        clock_held=held,
        threshold=policy.threshold,
        dropped=len(log.dropped),
        dropped_why=[f"{n} x {w}" for w, n in why.items()],
        recovery_waits=log.waits,
        recovery_wait_s=log.waited_s,
        persistent_slowdown=log.persistent,
        note="",
    )
    ev.note = _note(ev)
    if sampler.failed:
        ev.note += f"; the clock reader stopped early ({sampler.failed})"
    return ev


def _note(ev: ClockEvidence) -> str:
    if not ev.readings:
        return "no clock reading fell inside the timed work (too short for the sampling period)"
    rng = f"SM clock {ev.sm_mhz_min:.0f}-{ev.sm_mhz_max:.0f} MHz (median {ev.sm_mhz_median:.0f}"
    rng += f", rated max {ev.sm_mhz_rated_max:.0f})" if ev.sm_mhz_rated_max else ")"
    text = f"{rng} over {ev.readings} readings"
    if ev.reasons_seen:
        text += f"; reasons seen: {_fmt_reasons(ev.reasons_seen)}"
    if ev.clock_held is False:
        text += (
            "; the GPU could not hold its clock for this work (a power or thermal limit was active while "
            "it ran): absolute times are at the limited clock; a paired ratio is measured under the same "
            "limit on both sides"
        )
    if ev.dropped:
        text += f"; {ev.dropped} timed window(s) dropped for throttling ({'; '.join(ev.dropped_why)})"
    if ev.persistent_slowdown:
        text += "; the slowdown outlasted the recovery waits, so later windows were kept"
    return text
