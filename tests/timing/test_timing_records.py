"""Issue 33's device records: the cold figure against ncu on two H100 hosts and across them.

The records (tests/fixtures/timing/timing_vs_ncu_h100x{1,2}_r4.json, PROVENANCE.md) were made by
bench/timing_vs_ncu.py; these tests recompute its verdicts from the raw numbers so a change to the bench's
tolerance or to the record cannot pass unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
