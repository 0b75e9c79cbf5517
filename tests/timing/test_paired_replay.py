"""Recorded H100 paired runs replayed through the judge (`timing.stats.judge_ratios`, the one `compare`, eval
and sweeps use): the identical-work compare that read regressed at 1.012 is neutral now, the recorded ~3 %
changes keep their verdicts, and the placement allowance is what those recordings show. The analysis is
in docs/eval-design.md, "A self-compare that read regressed"."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.timing.models import PLACEMENT_ALLOWANCE, CompareRequest
from kernelpilot.timing.stats import judge_ratios, ratio_verdict

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "timing"
MIN_EFFECT = CompareRequest.model_fields["min_effect"].default
HALFWIDTH = CompareRequest.model_fields["ci_halfwidth_max"].default


def _load(name: str) -> Any:
    return json.loads((FIX / name).read_text())


def _bench_rows() -> list[dict[str, Any]]:
    run1, run2 = _load("paired_bench_h100_run1.json"), _load("paired_bench_h100_run2.json")
    return [*run1["rows"], *run2["study"], *run2["rows"]]


def _identical(row: dict[str, Any]) -> bool:
    return row["case"] not in ("slower", "faster")


def _judge(ratios: list[float]) -> tuple[float, float, float, str]:
    return judge_ratios(ratios, "lower", MIN_EFFECT, HALFWIDTH, PLACEMENT_ALLOWANCE)


def test_the_self_compare_that_read_regressed_is_neutral_now() -> None:
    rec = _load("compare_self_4mi_h100.json")
    assert rec["verdict"] == "regressed" and rec["min_effect"] == MIN_EFFECT  # what the H100 run said
    med, lo, hi, verdict = _judge(rec["ratios"])
    # the replay computes the recorded interval (the bootstrap is seeded), then judges it anew
    assert (med, lo, hi) == pytest.approx((rec["ratio_median"], *rec["ratio_ci"]), rel=1e-12)
    assert med == pytest.approx(1.0120, abs=5e-5) and lo == pytest.approx(1.0100, abs=5e-5)
    assert verdict == "neutral"
    # the minimum-effect band alone would still have called it: its CI starts just above 1.01
    assert ratio_verdict(med, lo, hi, "lower", MIN_EFFECT, HALFWIDTH, allowance=0.0) == "regressed"


def test_the_offset_of_that_compare_is_one_side_throughout_not_drift_order_or_autocorrelation() -> None:
    """Why it read 1.012: B's whole distribution sits 0.15 us above A's in every block, from the first to the
    last, in both of its slots; the block ratios are not positively autocorrelated (a block bootstrap would
    not widen the CI); the two sides took 24 and 23 launches per sample (10th percentiles of those counts
    differ by a few hundredths of a percent). What is left is per side and fixed for the run: its
    allocations."""
    rec = _load("compare_self_4mi_h100.json")
    r, a, b = rec["ratios"], rec["a_samples"], rec["b_samples"]
    assert min(r) > 1.0  # all 51 blocks
    half = len(r) // 2
    assert statistics.median(r[:half]) > 1.01 and statistics.median(r[half:]) > 1.01  # no warm-up decay
    a1, a2, b1, b2 = a[0::2], a[1::2], b[0::2], b[1::2]  # a block's first/last A, its two Bs
    gap = statistics.median(b) - statistics.median(a)
    assert 0.13 < gap < 0.16
    slots = [statistics.median(x) for x in (a1, a2, b1, b2)]
    assert max(slots[:2]) + 0.1 < min(slots[2:])  # each B slot above each A slot: not the position
    mean = statistics.fmean(r)
    lag1 = sum((x - mean) * (y - mean) for x, y in itertools.pairwise(r)) / sum((x - mean) ** 2 for x in r)
    assert lag1 < 0
    assert rec["launches_per_sample"] == [24, 23]
    assert "24 (A) / 23 (B)" in rec["timer_note"]


def test_the_recorded_three_percent_changes_keep_their_verdicts() -> None:
    rows = [r for r in _bench_rows() if not _identical(r)]
    assert len(rows) == 28  # gemm 5+5, 5 us (1 allocation) 5+5, 5 us (8 allocations) 4+4
    want = {"slower": "regressed", "faster": "improved"}
    for row in rows:
        med, lo, hi, verdict = _judge(row["ratios"])
        assert (med, lo, hi) == pytest.approx((row["ratio_median"], *row["ratio_ci"]), rel=1e-12)
        assert verdict == want[row["case"]] == row["verdict"], (row["kernel"], row["case"], med, lo, hi)


def test_every_recorded_identical_work_compare_stays_neutral() -> None:
    rows = [r for r in _bench_rows() if _identical(r)]
    assert len(rows) == 39
    assert {_judge(r["ratios"])[3] for r in rows} == {"neutral"}


def test_the_placement_allowance_is_what_identical_work_showed_on_the_h100() -> None:
    """PLACEMENT_ALLOWANCE is the farthest an identical-work compare's CI sat from 1 (0.28 %), rounded up
    to 0.3 %: not a padding chosen to pass the 1.012 case (any allowance above 0.004 % does that)."""
    rows = [r for r in _bench_rows() if _identical(r)]
    outside = max(max(r["ratio_ci"][0] - 1.0, 1.0 - r["ratio_ci"][1], 0.0) for r in rows)
    assert outside == pytest.approx(0.0028, abs=1e-4)
    assert outside <= PLACEMENT_ALLOWANCE < outside + 0.0005
    # so each of the 39 intervals, widened, contains the truth of identical work: 1
    a = PLACEMENT_ALLOWANCE
    assert all(r["ratio_ci"][0] * (1 - a) <= 1.0 <= r["ratio_ci"][1] * (1 + a) for r in rows)


@pytest.mark.parametrize(
    ("name", "want"), [("eval_gemm_same_h100.json", "neutral"), ("eval_gemm_slower_h100.json", "regressed")]
)
def test_the_recorded_gemm_evals_keep_their_verdicts(name: str, want: str) -> None:
    """eval's paired records keep both sides' samples in block order (two per side per block), so the block
    ratios, and with them the recorded CI, come back exactly; the judge keeps the verdict."""
    rec = _load(name)["record"]
    a, b = rec["baseline_samples"], rec["samples"]
    ratios = [(b[i] + b[i + 1]) / (a[i] + a[i + 1]) for i in range(0, len(a), 2)]
    assert len(ratios) == rec["pairs"] and rec["status"] == want
    med, lo, hi, verdict = _judge(ratios)
    assert (med, lo, hi) == pytest.approx((rec["ratio_median"], *rec["ratio_ci"]), rel=1e-12)
    assert verdict == want


def test_a_later_h100_run_held_out_from_the_allowance_keeps_every_verdict() -> None:
    """paired_bench_h100_run3 (2026-11-24, recorded after PLACEMENT_ALLOWANCE was set from the runs above):
    the 12288^3 bf16 GEMM (~5 ms, at the power cap: ~30 blocks of 36 dropped for throttling per verdict) and
    the 5 us kernel with 8 allocations per side, each against itself, +3 %, the reverse and itself with B's
    inputs allocated first, 5 repetitions: all 40 verdicts replay as recorded and as expected, and each
    identical-work CI, widened by the allowance, contains 1."""
    rows = _load("paired_bench_h100_run3.json")["rows"]
    assert len(rows) == 40 and {r["kernel"] for r in rows} == {"gemm12k", "mem5us"}
    want = {"slower": "regressed", "faster": "improved", "self": "neutral", "self-b-first": "neutral"}
    a = PLACEMENT_ALLOWANCE
    for row in rows:
        med, lo, hi, verdict = _judge(row["ratios"])
        assert (med, lo, hi) == pytest.approx((row["ratio_median"], *row["ratio_ci"]), rel=1e-12)
        assert verdict == want[row["case"]] == row["verdict"], (row["kernel"], row["case"], med, lo, hi)
        if _identical(row):
            assert lo * (1 - a) <= 1.0 <= hi * (1 + a), (row["kernel"], row["case"], lo, hi)
    gemm = [r for r in rows if r["kernel"] == "gemm12k"]
    assert all(r["wall_s"] <= 20.0 for r in gemm)
