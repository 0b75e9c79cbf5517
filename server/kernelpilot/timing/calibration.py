"""Per GPU model: what ncu's gpu__time_duration spans beyond a kernel's traced start-to-end (the cold offset).

Why: the cold figure used to be event pairs around flushed launches net of an empty pair. The empty pair's
reading depends on the host, not the GPU (1.2 µs on a one-GPU H100 host, 2.9 µs on a two-GPU one), and only
part of it is inside a pair around a kernel, so the same kernel read up to 1 µs apart on two hosts (issue 33).
A kernel's start-to-end in the activity trace (CUPTI / roctracer) is the GPU's own timestamp pair: it read
the same on every host, a steady amount under ncu's gpu__time_duration, which also spans the launch's
front-end work and completion. That amount is a property of the GPU model, measured by
`bench/cold_probe.py` (traced spans and ncu of the same kernels) and recorded here with its evidence; the
cold figure is then traced span + offset per kernel, and says so (`models.ColdDerivation`).

Owns the offset table and the derivation record. It times nothing (`timing.gpu` does).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.timing.models import ColdDerivation


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

def lookup(torch: Any) -> Offset | None:
    """The offset of the GPU torch is using, or None when this model has not been measured."""
    try:
        name = str(torch.cuda.get_device_name())
    except Exception:  # a torch without a device name (fake or broken): no offset, event pairs are used
        return None
    return TABLE.get(name)


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
