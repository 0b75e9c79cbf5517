"""A sweep cell timed under its roofline floor records IMPOSSIBLE, not a roofline % over 100."""

from __future__ import annotations

from pathlib import Path

from kernelpilot.sweep import spec as sweep_spec
from kernelpilot.sweep.models import CellOutcome, CellTiming
from kernelpilot.sweep.records import RoofPoint, cell_record


class _Roof:
    def __init__(self, floor_us: float) -> None:
        self.floor_us = floor_us
        self.gpu_id = "h100-sxm5"

    def point(self, shape: object) -> RoofPoint:
        return RoofPoint(self.floor_us, 0.5, ["memory_bandwidth_tb_s: 3.35 TB/s <- x.md:L1"], "memory")


def _cell(sweep_dir: Path, floor_us: float) -> dict[str, object]:
    loaded = sweep_spec.load(str(sweep_dir / "sweep.toml"), check=False)
    shape = sweep_spec.read_ledger(sweep_dir / loaded.spec.ledger)[0]
    timing = CellTiming(
        median_us=50.0, samples_us=[50.0, 50.0, 50.0], cv=0.0, stable=True, method="cuda_event"
    )
    out = CellOutcome(variant=loaded.spec.baseline, shape_key=shape.key, state="timed", timing=timing)
    rec = cell_record(loaded, out, shape, _Roof(floor_us), "us")  # type: ignore[arg-type]
    roof = rec.raw_result["roofline"]
    assert isinstance(roof, dict)
    return roof


def test_under_the_floor_the_cell_has_no_pct_and_says_impossible(sweep_dir: Path) -> None:
    roof = _cell(sweep_dir, 80.0)
    assert roof["pct"] is None
    assert isinstance(roof["impossible"], str) and roof["impossible"].startswith(
        "IMPOSSIBLE: median time 50 µs"
    )


def test_over_the_floor_the_cell_keeps_its_pct(sweep_dir: Path) -> None:
    roof = _cell(sweep_dir, 40.0)
    assert roof["pct"] == 80.0 and roof["impossible"] is None
