"""Issue 33's device records: the cold figure against ncu on two H100 hosts and across them.

The records (tests/fixtures/timing/timing_vs_ncu_h100x{1,2}_r4.json, PROVENANCE.md) were made by
bench/timing_vs_ncu.py; these tests recompute its verdicts from the raw numbers so a change to the bench's
tolerance or to the record cannot pass unnoticed.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from kernelpilot.timing.calibration import TABLE

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "timing"
RECORDS = {"h100x1": "timing_vs_ncu_h100x1_r4.json", "h100x2": "timing_vs_ncu_h100x2_r4.json"}
# Issue 33's five new kernels (1.5-16 us) and the previous five, kept in the check.
NEW_FIVE = ("saxpy_cupy_256k", "softmax_bf16_512x2048", "layernorm_bf16_2048", "triton_rmsnorm_2048x4096",
            "cast_f32_bf16_4m")  # fmt: skip
OLD_FIVE = ("add_bf16_2m", "gather_64x4096", "gelu_bf16_4m", "rowsum_4096x1024", "triton_silu_mul_8m")


def _rows(machine: str) -> dict[str, dict]:
    doc = json.loads((FIX / RECORDS[machine]).read_text(encoding="utf-8"))
    return {r["kernel"]: r for r in doc["rows"]}


def _cold_ok(row: dict) -> bool:
    return abs(row["kp_cold_us"] - row["ncu_us"]) <= max(0.02 * row["ncu_us"], 0.3)


@pytest.mark.parametrize("machine", sorted(RECORDS))
def test_every_cold_figure_is_the_traced_span_plus_the_offset(machine: str) -> None:
    for row in _rows(machine).values():
        assert row["cold_derivation"]["method"] == "kernel_span_plus_offset", row["kernel"]
        assert row["cold_derivation"]["offset_us_per_kernel"] == pytest.approx(1.41)


def test_cold_within_tolerance_of_ncu_on_both_hosts() -> None:
    one, two = _rows("h100x1"), _rows("h100x2")
    assert all(_cold_ok(one[k]) for k in NEW_FIVE + OLD_FIVE)
    misses = sorted(k for k in NEW_FIVE + OLD_FIVE if not _cold_ok(two[k]))
    assert misses == ["layernorm_bf16_2048"]  # -0.32 us: its own ncu offset is 1.60-1.68 us (PROVENANCE.md)
    # the event-pair figure the issue reported is still host-dependent; the new figure is not
    ev_gap = [two[k]["kp_cold_events_us"] - two[k]["ncu_us"] for k in OLD_FIVE]
    assert max(ev_gap) < -0.5


def test_short_kernels_agree_across_hosts_within_0_3_us() -> None:
    one, two = _rows("h100x1"), _rows("h100x2")
    for k in NEW_FIVE + OLD_FIVE:
        assert abs(one[k]["kp_cold_us"] - two[k]["kp_cold_us"]) <= 0.3, k


def test_the_check_fails_on_a_shifted_figure() -> None:
    row = dict(_rows("h100x1")["add_bf16_2m"])
    row["kp_cold_us"] = row["ncu_us"] - 0.9  # the two-GPU host's old event-pair error
    assert not _cold_ok(row)


# The H100 offset was fitted on the kernels of the cold probes (tests/fixtures/timing/cold_probe_*.json); the
# records also timed nine kernels the fit never saw. Under 50 us the offset is a visible share of the figure;
# above it, 2 % of ncu dwarfs it (mm_fp32's 2.6 ms differ by 25-28 us on both hosts).
SHORT_US = 50.0


def _fitted() -> set[str]:
    return {
        k for p in FIX.glob("cold_probe_*.json") for k in json.loads(p.read_text(encoding="utf-8"))["kernels"]
    }


def _held_out_misses(rows: dict[str, dict], offset_us: float) -> list[str]:
    """Held-out kernels whose cold figure, recomputed as traced span + `offset_us`, misses ncu by more than
    max(2 %, 0.3 us); the span is the record's figure less the offset it was derived with."""
    misses = []
    for k in sorted(set(rows) - _fitted()):
        row = rows[k]
        span = row["kp_cold_us"] - row["cold_derivation"]["offset_us_per_kernel"]
        if not _cold_ok({**row, "kp_cold_us": span + offset_us}):
            misses.append(k)
    return misses


@pytest.mark.parametrize("machine", sorted(RECORDS))
def test_the_offset_holds_on_the_nine_kernels_it_was_not_fitted_on(machine: str) -> None:
    """Held-out check: every kernel outside the fit lands within max(2 %, 0.3 us) of ncu with the table's
    offset, and on the short ones ncu minus the traced span lies inside the range the fit recorded, with a
    median within 0.1 us of the offset (as the fitted kernels' is: tests/timing/test_calibration.py)."""
    rows = _rows(machine)
    offset = TABLE["NVIDIA H100 80GB HBM3"]
    held_out = sorted(set(rows) - _fitted())
    assert len(held_out) == 9, held_out
    assert _held_out_misses(rows, offset.offset_us) == []
    lo = min(e["ncu_minus_span_us"]["min"] for e in offset.evidence)
    hi = max(e["ncu_minus_span_us"]["max"] for e in offset.evidence)
    short = [rows[k] for k in held_out if rows[k]["ncu_us"] < SHORT_US]
    implied = [r["ncu_us"] - (r["kp_cold_us"] - r["cold_derivation"]["offset_us_per_kernel"]) for r in short]
    assert len(short) == 5 and all(lo <= d <= hi for d in implied), (lo, hi, implied)
    assert abs(statistics.median(implied) - offset.offset_us) <= 0.1


def test_the_held_out_check_fails_without_the_offset() -> None:
    """The raw traced span (no offset) misses ncu on every short held-out kernel, on both hosts."""
    for machine in RECORDS:
        rows = _rows(machine)
        short = sorted(k for k in set(rows) - _fitted() if rows[k]["ncu_us"] < SHORT_US)
        assert set(short) <= set(_held_out_misses(rows, 0.0)) and len(short) == 5
