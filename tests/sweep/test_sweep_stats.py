"""The sweep statistics against hand-computed values."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from kernelpilot.sweep import stats


def test_weighted_geomean_is_the_weighted_mean_of_logs():
    assert stats.weighted_geomean([2.0, 0.5], [1, 1]) == pytest.approx(1.0)
    assert stats.weighted_geomean([2.0, 1.0], [3, 1]) == pytest.approx(2 ** (3 / 4))
    assert stats.weighted_geomean([1.21], [7]) == pytest.approx(1.21)


def test_geomean_ci_brackets_the_point_and_shrinks_with_less_noise():
    rng = np.random.default_rng(1)
    noisy = [(list(100 + rng.normal(0, 5, 30)), list(50 + rng.normal(0, 5, 30)), w) for w in (1, 2, 3)]
    quiet = [(list(100 + rng.normal(0, 0.5, 30)), list(50 + rng.normal(0, 0.5, 30)), w) for w in (1, 2, 3)]
    lo, hi = stats.geomean_ci(noisy, "lower")
    qlo, qhi = stats.geomean_ci(quiet, "lower")
    assert lo < 2.0 < hi and qlo < 2.0 < qhi
    assert (qhi - qlo) < (hi - lo) / 3
    # same inputs, same seed, same interval
    assert stats.geomean_ci(noisy, "lower") == (lo, hi)
    # 'higher is better' metrics invert the ratio
    hlo, hhi = stats.geomean_ci(noisy, "higher")
    assert hlo == pytest.approx(1 / hi, rel=0.05) and hhi == pytest.approx(1 / lo, rel=0.05)


def test_cell_verdict_needs_the_ci_past_one_and_stability():
    assert stats.verdict(1.5, (1.3, 1.7), True, 0.02) == "win"
    assert stats.verdict(1.5, (0.9, 1.7), True, 0.02) == "parity"  # CI holds 1: no claim
    assert stats.verdict(0.7, (0.6, 0.8), True, 0.02) == "loss"
    assert stats.verdict(1.01, (1.005, 1.015), True, 0.02) == "parity"  # inside the parity band
    assert stats.verdict(1.5, (1.3, 1.7), False, 0.02) == "unstable"
    assert math.isclose(stats.cell_ci([10.0] * 5, [5.0] * 5, "lower")[0], 2.0)


def test_stop_conditions_need_every_shape_correct_stable_and_above_the_floor():
    from kernelpilot.sweep.models import CellRow, SweepSpec, VariantSummary
    from kernelpilot.sweep.records import _stop

    spec = SweepSpec.model_validate(
        {
            "name": "s",
            "operator": "gemm",
            "baseline": "a",
            "ledger": "l.jsonl",
            "stop": {"min_geomean": 1.10, "min_shape_speedup": 0.95},
            "variants": {"a": {"factory": "k.py:a"}, "b": {"factory": "k.py:b"}},
        }
    )
    worst = CellRow(
        record_id="x", variant="b", shape_key="k", line=3, label="L3", model="m", stage="s", dtype="bf16",
        weight=1.0, verdict="parity", speedup=0.97,
    )  # fmt: skip

    def summary(**kw) -> VariantSummary:
        base = {"variant": "b", "role": "candidate", "cells": 4, "correct_cells": 4, "incorrect": 0}
        return VariantSummary(**{"unstable": 0, "geomean": 1.2, "worst": [worst], **base, **kw})

    ok = summary()
    _stop(ok, spec, 4)
    assert ok.stop_met is True and "geomean 1.200x >= 1.10x" in ok.stop_note
    low = summary(worst=[worst.model_copy(update={"speedup": 0.9})])
    _stop(low, spec, 4)
    assert low.stop_met is False and "worst shape L3 0.900x < 0.95x" in low.stop_note
    shaky = summary(unstable=1)
    _stop(shaky, spec, 4)
    assert shaky.stop_met is False and "1 unstable" in shaky.stop_note
    partial = summary(cells=3)
    _stop(partial, spec, 4)
    assert partial.stop_met is False and "only 3 of 4 shapes" in partial.stop_note


@pytest.mark.parametrize(
    ("judged", "expected"),
    [("neutral", "parity"), ("improved", "win"), ("regressed", "loss"), ("unstable", "unstable")],
)
def test_a_paired_cell_takes_the_paired_judges_verdict(sweep_dir: Path, judged: str, expected: str):
    """A candidate 2.3 % faster by its median whose CI reaches back inside the 2 % parity band: the paired
    judge (whole CI outside the band, as compare and eval judge) says neutral, and so does the sweep cell,
    where the speed-up rule alone (median past parity, CI excluding 1) would have called it a win."""
    from kernelpilot.sweep import spec as sweep_spec
    from kernelpilot.sweep.models import CellOutcome, CellTiming, PairedCell
    from kernelpilot.sweep.records import Roofline, cell_record

    loaded = sweep_spec.load(str(sweep_dir / "sweep.toml"), check=False)
    shape = sweep_spec.read_ledger(sweep_dir / loaded.spec.ledger)[0]
    pc = PairedCell(
        ratio_median=0.9775, ratio_ci=[0.97, 0.985], ratios=[0.97, 0.9775, 0.985], pairs=3,
        baseline_median_us=100.0, verdict=judged, baseline_samples=[100.0, 100.0, 100.0],
    )  # fmt: skip
    timing = CellTiming(
        median_us=97.75, samples_us=[97.0, 97.75, 98.5], cv=0.01, stable=True, method="x", paired=pc
    )
    candidate = next(v for v in loaded.spec.variants if v != loaded.spec.baseline)
    out = CellOutcome(variant=candidate, shape_key=shape.key, state="timed", timing=timing)
    rec = cell_record(loaded, out, shape, Roofline(loaded.spec), "us")
    assert rec.raw_result["verdict"] == expected
    assert rec.raw_result["speedup"] == pytest.approx(1 / 0.9775)
    assert stats.verdict(1 / 0.9775, (1 / 0.985, 1 / 0.97), True, loaded.spec.parity) == "win"  # the old rule
