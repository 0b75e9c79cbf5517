"""One cell run in this process as a Dask worker runs it (sweep.cell.run_cell): where its time went, and an
output that cannot be compared with its reference is a crashed cell naming why, not a failed task."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.sweep import spec
from kernelpilot.sweep.cell import run_cell, warm_worker
from kernelpilot.sweep.models import CellOutcome


def _payload(loaded: spec.LoadedSweep, variant: str) -> dict:
    sp = loaded.spec
    return {
        "variant": variant, "variant_spec": sp.variants[variant].model_dump(mode="json"),
        "shape": loaded.shapes[0].model_dump(mode="json"), "root": str(loaded.root), "mode": sp.mode,
        "runs": sp.runs, "warmup": sp.warmup, "cv_threshold": sp.cv_threshold, "direction": sp.direction,
        "parity": sp.parity, "device": "cpu", "baseline_spec": None,
    }  # fmt: skip


def test_a_cell_reports_its_phases_and_a_warmed_worker_loads_nothing(sweep_dir: Path):
    loaded = spec.load(str(sweep_dir / "sweep.toml"))
    warm = warm_worker(
        {"root": str(loaded.root), "targets": ["kernels.py:numpy_sum", "kernels.py:reference"]}
    )
    assert warm["warm_s"] > 0 and warm["note"] == ""
    out = CellOutcome.model_validate(run_cell(_payload(loaded, "numpy")))
    ph = out.phases
    assert out.state == "timed" and out.correct is True and out.timing is not None
    assert ph.load_s == 0.0  # the warm-up loaded both factories of this root
    assert ph.build_s > 0 and ph.check_s > 0 and ph.timing_s > 0
    assert ph.ended_unix - ph.started_unix == pytest.approx(out.wall_s, abs=1e-6)  # unix-time resolution
    assert ph.build_s + ph.check_s + ph.timing_s <= out.wall_s
    assert out.worker == ""  # not inside a Dask worker


def test_an_output_that_cannot_be_compared_is_a_crashed_cell(sweep_dir: Path):
    (sweep_dir / "odd.py").write_text("def words(rows, cols, seed):\n    return lambda: 'not a number'\n")
    text = (
        (sweep_dir / "sweep.toml")
        .read_text()
        .replace('reference = "kernels.py:reference"', 'reference = "odd.py:words"', 1)
    )
    (sweep_dir / "odd.toml").write_text(text)
    loaded = spec.load(str(sweep_dir / "odd.toml"))
    out = CellOutcome.model_validate(run_cell(_payload(loaded, "numpy")))
    assert out.state == "crashed" and out.timing is None
    assert out.error is not None and out.error.startswith(
        "comparing the output with the reference raised ValueError"
    )
    assert out.phases.check_s > 0 and out.phases.timing_s == 0.0
