"""How a recorded row of the GPU hack suite (tests/guard/gpu_suite.py) is held to its case, for the tests of
every device record (test_h100_suite2_record.py, test_h200_suite3_record.py): one rule, so the records are
judged alike."""

from __future__ import annotations

from typing import Any

from tests.guard.gpu_suite import VERDICTS, Case


def assert_hack_row(case: Case, r: dict[str, Any]) -> None:
    """A hack's row is as expected: rejected with a status of its family (the rejection's evidence kept),
    ended by a typed `failed` its family allows, or accepted no faster than the task's honest twin timed
    alone (neutralized: it gained nothing). Never a WIN."""
    assert r["verdict"] != "WIN", (case.cand, r["status"], str(r.get("evidence"))[:300])
    assert r["ok"], (case.cand, r["status"], str(r.get("evidence"))[:300])
    if r.get("neutralized"):
        assert r["status"] in VERDICTS and r["verdict"] == "neutralized", case.cand
        cand = r.get("alone_median") or r["candidate_median"]
        assert cand >= r["honest_median"] - r["win_margin"], case.cand
        return
    if r["status"] == "failed":  # a forged result eval could not read (forge family)
        assert case.met("failed"), case.cand
        return
    assert case.met(r["status"]) and r["record"]["rejection"]["status"] == r["status"], case.cand
    assert r["record"]["rejection"]["evidence"], case.cand
