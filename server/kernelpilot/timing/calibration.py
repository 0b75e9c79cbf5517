"""Per GPU model: what ncu's gpu__time_duration spans beyond a kernel's traced start-to-end (the cold offset).

Why: the cold figure used to be event pairs around flushed launches net of an empty pair. The empty pair's
reading depends on the host, not the GPU (1.2 µs on a one-GPU H100 host, 2.9 µs on a two-GPU one), and only
part of it is inside a pair around a kernel, so the same kernel read up to 1 µs apart on two hosts (issue 33).
A kernel's start-to-end in the activity trace (CUPTI / roctracer) is the GPU's own timestamp pair: it read
the same on every host, a steady amount under ncu's gpu__time_duration, which also spans the launch's
front-end work and completion. That amount is a property of the GPU model, measured by
`bench/cold_probe.py` (traced spans and ncu of the same kernels) and recorded here with its evidence; the
cold figure is then traced span + offset per kernel, and says so (`models.ColdDerivation`).

On a GPU model the table lacks, the offset is measured at first use when ncu is installed (three torch
kernels timed by ncu in a child process and by the trace in this one, `calibrate_with_ncu`) and cached per
GPU UUID under the user's cache folder with its evidence and date; without ncu the cold figure falls back
to event pairs, labelled. Owns the offset table, that cache and the derivation record; the traced spans
come from `timing.gpu` (passed in, so this module imports no timing loop).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import json
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelpilot.foundation.atomic import write_json_atomic
from kernelpilot.foundation.errors import KernelpilotError, OutputPathError
from kernelpilot.timing.models import ColdDerivation

NO_CALIBRATION_ENV = "KERNELPILOT_NO_NCU_CALIBRATION"  # set: never run ncu to measure an offset
CAL_LAUNCHES = 15  # launches of each calibration kernel under ncu; the first 3 are dropped
CAL_MARKER = "spin_kernel"  # torch.cuda._sleep's kernel, launched between calibration kernels under ncu


@dataclass(frozen=True)
class Offset:
    """ncu gpu__time_duration minus the traced kernel span, per kernel, on one GPU model."""

    gpu: str
    offset_us: float
    measured_utc: str
    source: str = "table"
    evidence: tuple[dict[str, Any], ...] = field(default_factory=tuple)


# GPU model (torch.cuda.get_device_name) -> offset, from the recorded probe runs under
# tests/fixtures/timing/cold_probe_*.json (tests/timing/test_calibration.py holds the values to them).
TABLE: dict[str, Offset] = {
    "NVIDIA H100 80GB HBM3": Offset(
        gpu="NVIDIA H100 80GB HBM3",
        offset_us=1.41,
        measured_utc="2026-11-27T01:42:13+00:00",
        evidence=(
            {
                "machine": "one-GPU H100 host (driver 580.159.04; empty event pair 1.31 us)",
                "kernels": 13,
                "ncu_minus_span_us": {"median": 1.408, "min": 1.28, "max": 1.6},
                "recorded": "tests/fixtures/timing/cold_probe_h100x1.json",
            },
            {
                "machine": "one-GPU H100 host, again a minute later (empty event pair 1.28 us)",
                "kernels": 13,
                "ncu_minus_span_us": {"median": 1.424, "min": 1.296, "max": 1.68},
                "recorded": "tests/fixtures/timing/cold_probe_h100x1_run2.json",
            },
            {
                "machine": "two-GPU H100 host (driver 580.159.04; empty event pair 2.88 us)",
                "kernels": 13,
                "ncu_minus_span_us": {"median": 1.392, "min": 1.216, "max": 1.6},
                "recorded": "tests/fixtures/timing/cold_probe_h100x2.json",
            },
        ),
    ),
}


def _device(torch: Any) -> tuple[str, str]:
    """(name, UUID) of the GPU torch is using; UUID '' when torch does not report one."""
    name = str(torch.cuda.get_device_name())
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return name, str(getattr(props, "uuid", "") or "")


def lookup(torch: Any, calibrate: Callable[[], Offset | None] | None = None) -> Offset | None:
    """This GPU's offset: measured on it earlier (cache), else its model's (table), else measured now by
    `calibrate` (ncu; only on a GPU with a UUID, never with KERNELPILOT_NO_NCU_CALIBRATION set), or None."""
    try:
        name, uuid = _device(torch)
    except Exception:  # a torch without a device name (fake or broken): no offset, event pairs are used
        return None
    cached = read_cache(uuid) if uuid else None
    if cached is not None and cached.gpu == name:
        return cached
    if name in TABLE:
        return TABLE[name]
    if calibrate is None or not uuid or os.environ.get(NO_CALIBRATION_ENV):
        return None
    return calibrate()


def cache_file(uuid: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    safe = "".join(c for c in uuid if c.isalnum() or c == "-")[:80]
    return Path(base) / "kernelpilot" / f"cold-offset-{safe}.json"


def read_cache(uuid: str) -> Offset | None:
    """The offset measured on this GPU earlier, or None (absent, unreadable or malformed: ignored)."""
    try:
        raw = json.loads(cache_file(uuid).read_text(encoding="utf-8"))
        return Offset(
            gpu=str(raw["gpu"]),
            offset_us=float(raw["offset_us"]),
            measured_utc=str(raw["measured_utc"]),
            source="cache",
            evidence=tuple(dict(e) for e in raw.get("evidence", [])),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no usable cache: measured again or taken from the table


def calibration_closures(torch: Any) -> dict[str, Callable[[], Any]]:
    """Three one-kernel torch closures of ~2, ~6 and ~12 µs (H100) that the flush and hold never run."""
    small = torch.ones(1024, device="cuda")
    a = torch.randn(2 << 20, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2 << 20, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    x = torch.randn(512, 2048, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    return {
        "mul_1k_fp32": lambda: small.mul_(1.0),
        "add_bf16_2m": lambda: torch.add(a, b, out=c),
        "softmax_bf16_512x2048": lambda: torch.softmax(x, dim=-1, out=y),
    }


def gpu_time_rows(csv_text: str) -> list[tuple[str, float]]:
    """(kernel name, gpu__time_duration in µs) of every launch in ncu's --csv output, in launch order
    (the units as ncu prints them, through `profile.units`)."""
    from kernelpilot.profile.units import to_base

    rows = [ln for ln in csv_text.splitlines() if ln.startswith('"')]
    out = []
    for r in csv.DictReader(rows):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ns, base = to_base(r.get("Metric Value", ""), r.get("Metric Unit", ""))
        if ns is not None and base == "ns":
            out.append((r.get("Kernel Name", "?"), ns / 1e3))
    return out


def ncu_medians(csv_text: str, names: list[str], marker: str, launches: int) -> dict[str, float]:
    """Median gpu__time_duration (µs) per kernel from ncu's --csv output of a child that ran `launches`
    launches of each named closure in turn, each block followed by one `marker` kernel; first 3 dropped."""
    blocks: list[list[float]] = [[]]
    for kernel, us in gpu_time_rows(csv_text):
        if marker in kernel:
            blocks.append([])
            continue
        blocks[-1].append(us)
    return {
        name: statistics.median(blk[3:])
        for name, blk in zip(names, blocks, strict=False)
        if len(blk) == launches
    }


def calibrate_with_ncu(torch: Any, span_us: Callable[[Callable[[], Any]], float | None]) -> Offset | None:
    """Measure this GPU's offset: ncu's gpu__time_duration of the calibration kernels (a child process)
    minus their traced span here (`span_us`), median over the three; cached. None without ncu or when a
    step fails (the caller then uses event pairs)."""
    from kernelpilot.host import toolchain

    exe = toolchain.find_tool("ncu")
    if exe is None:
        return None
    name, uuid = _device(torch)
    names = list(calibration_closures(torch))
    argv = [str(exe), "--profile-from-start", "off", "--cache-control", "all", "--clock-control", "none",
            "--metrics", "gpu__time_duration.sum", "--csv", sys.executable, "-m", __name__]  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    try:
        res = toolchain.run(argv, timeout_s=180.0, env=env, check=False)
    except KernelpilotError:
        return None  # ncu could not run here (permissions, timeout): no offset, event pairs are used
    ncu = ncu_medians(res.stdout, names, CAL_MARKER, CAL_LAUNCHES)
    evidence: list[dict[str, Any]] = []
    for kname, fn in calibration_closures(torch).items():
        span = span_us(fn)
        if kname in ncu and span is not None:
            evidence.append({"kernel": kname, "ncu_us": round(ncu[kname], 3), "span_us": round(span, 3)})
    if len(evidence) < len(names):
        return None
    offset = statistics.median(e["ncu_us"] - e["span_us"] for e in evidence)
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    off = Offset(
        gpu=name, offset_us=round(offset, 3), measured_utc=now, source="ncu", evidence=tuple(evidence)
    )
    # an unwritable cache folder: the offset holds for this run and is measured again next time
    with contextlib.suppress(OSError, OutputPathError):
        write_json_atomic(cache_file(uuid), {**asdict(off), "uuid": uuid, "source": "cache"}, mkdir=True)
    return off


def _ncu_child() -> None:
    """The process `calibrate_with_ncu` runs under ncu (python -m kernelpilot.timing.calibration)."""
    import importlib

    torch: Any = importlib.import_module("torch")  # the child exists to run torch (typed or not)
    fns = calibration_closures(torch)
    for fn in fns.values():
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in fns.values():
        for _ in range(CAL_LAUNCHES):
            fn()
        torch.cuda._sleep(1)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def _age_days(measured_utc: str, now: _dt.datetime | None = None) -> float | None:
    try:
        then = _dt.datetime.fromisoformat(measured_utc)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=_dt.UTC)
    now = now or _dt.datetime.now(_dt.UTC)
    return round((now - then).total_seconds() / 86400.0, 1)


def derive_traced(offset: Offset | None, kernels_per_launch: int | None) -> ColdDerivation:
    """The derivation of a traced cold figure (with this GPU's offset, or the raw span when None)."""
    if offset is None:
        return ColdDerivation(
            method="kernel_span_plus_offset",
            offset_us_per_kernel=0.0,
            kernels_per_launch=kernels_per_launch,
            offset_source="none",
            note="the traced kernel span alone (--cold-timer trace): no offset added, so short kernels read "
            "about 1.4 us per kernel under ncu's gpu__time_duration (H100)",
        )
    kc = kernels_per_launch or 1
    return ColdDerivation(
        method="kernel_span_plus_offset",
        offset_us_per_kernel=offset.offset_us,
        kernels_per_launch=kernels_per_launch,
        offset_source=offset.source,
        gpu=offset.gpu,
        measured_utc=offset.measured_utc,
        age_days=_age_days(offset.measured_utc),
        evidence=[dict(e) for e in offset.evidence],
        note=f"traced kernel span + {kc} x {offset.offset_us:.3f} us (ncu's gpu__time_duration minus the "
        f"traced span on {offset.gpu}, measured {offset.measured_utc}, {offset.source})",
    )


def derive_events(floor_us: float, why: str) -> ColdDerivation:
    """The derivation of an event-pair cold figure (host-dependent: the note says why it was used)."""
    return ColdDerivation(
        method="event_pairs_net_of_floor",
        offset_source="none",
        event_floor_us=floor_us,
        note=f"event pairs net of an empty pair ({floor_us:.3f} us) because {why}; the empty pair's reading "
        "depends on the host (1.2-2.9 us on H100 hosts), so this figure can read up to ~1 us off ncu",
    )


if __name__ == "__main__":
    _ncu_child()
