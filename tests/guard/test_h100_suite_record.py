"""Issue 25's acceptance run as recorded on the H100 (tests/fixtures/guard/h100_suite, PROVENANCE.md there):
the suite's table held against the suite's own plan, so the record and the cases cannot drift apart, and
the evidence each rejection carries checked for what the issue asks (the check, the numbers, cited peaks)."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from tests.guard.gpu_suite import suite1_plan as gpu_plan  # issue 25's plan, as this record ran it

REC = Path(__file__).resolve().parent.parent / "fixtures" / "guard" / "h100_suite"
CITED = re.compile(r"[A-Za-z0-9 _./()-]+: [0-9.]+ [A-Za-z/]+ <- gpu-wiki-index/[\w./-]+\.md:L\d+")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return list(json.loads((REC / "suite.json").read_text()))


def test_every_case_of_the_plan_ran_once_and_came_out_as_expected(rows: list[dict[str, Any]]) -> None:
    plan = gpu_plan()
    want = {(c, t, p): s for c, t, s, p in plan.hacks} | {(c, t, p): "accepted" for c, t, p in plan.benign}
    got = {(r["candidate"], r["task"], r["pattern"]): r for r in rows}
    assert len(rows) == len(got) == len(want) == 18 and set(got) == set(want)
    for key, status in want.items():
        r = got[key]
        assert r["ok"] and r["expect"] == status, (key, r["status"])
        if status != "accepted":
            assert r["status"] == status and r["record"]["rejection"]["status"] == status
            assert r["record"]["rejection"]["evidence"], key


def test_the_look_alikes_were_judged_paired_and_agree_with_time(rows: list[dict[str, Any]]) -> None:
    benign = [r for r in rows if r["expect"] == "accepted"]
    assert len(benign) == 6
    for r in benign:
        assert r["status"] == "improved" and r["method"] == "paired" and r["time_verdict"] == "improved"
        assert r["time_agrees"] and r["ratio_ci"][1] < 1.0
        # eval's paired speed-up and the one two `time` runs give are within 2 % of each other
        assert r["speedup"] == pytest.approx(r["time_speedup"], rel=0.02), r["pattern"]
        phys = r["record"]["physics"]
        assert phys["checked"] and phys["floor_us"] < phys["time_us"], r["pattern"]
        assert all(CITED.fullmatch(c) for c in phys["citations"][:2]), phys["citations"]


def test_the_impossible_time_shows_its_arithmetic_and_cites_the_peaks(rows: list[dict[str, Any]]) -> None:
    r = next(r for r in rows if r["expect"] == "rejected_impossible")
    rej = r["record"]["rejection"]
    assert rej["check"] == "physics" and rej["numbers"]["time_us"] < rej["numbers"]["floor_us"]
    assert "floor = max(" in rej["evidence"] and "989.4 TFLOP/s" in rej["evidence"]
    assert "<- gpu-wiki-index/" in rej["evidence"]


def test_the_guard_overhead_figures_recorded_on_the_h100() -> None:
    """The bench's two figures, recomputed from its per-repetition lines: the difference of two process
    walls (noisy: torch's import alone spreads ~0.9 s) and the checks timed inside the process."""
    diffs, direct = [], []
    for name in ("overhead_run1.log", "overhead_run2.log", "overhead_run3.log"):
        walls: dict[tuple[int, str], float] = {}
        for line in (REC / name).read_text().splitlines():
            m = re.match(r"rep (\d+) (guarded|unguarded)\s+([\d.]+) s ", line)
            checks = re.search(r"harness checks ([\d.]+) s", line)
            if m:
                walls[(int(m[1]), m[2])] = float(m[3])
            if m and checks:
                direct.append(float(checks[1]) / float(m[3]) * 100)
        reps = sorted({k for k, _ in walls})
        for k in reps:
            g, u = walls[(k, "guarded")], walls[(k, "unguarded")]
            diffs.append((g - u) / g * 100)
    assert len(diffs) == len(direct) == 25
    assert statistics.median(diffs) <= 10.0 and max(direct) <= 10.0
    assert "figure=4.4 %" in (REC / "overhead_run3.log").read_text()
