"""The guard's GPU hack suite as recorded on an H200 after issue 40 changed the guard's shared parts
(tests/fixtures/guard/h200_suite3, PROVENANCE.md there), held against the suite's own plan so the record and
the cases cannot drift apart.

Issue 40 built the isolated judge for CPU contracts and, on the way, changed what GPU contracts share with it
(the reference protocol, integer outputs, the input maker): GPU contracts still run under the in-process
guard, and this one device call (`KP_SUITE_ONLY=1 KP_SUITE_PART=hacks bash tests/guard/gpu_run.sh`) is the
check that none of those changes opened a hole there. Every hack is rejected with a status of its family,
or accepted no faster than the task's honest twin timed alone (neutralized: it gained nothing), never a WIN.
The look-alike half was not run (the device machine would not start again before the session's device time
ran low): that gap is the H100 record's (test_h100_suite2_record.py), named here, not hidden.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.guard.gpu_suite import gpu_plan
from tests.guard.suite_records import assert_hack_row

REC = Path(__file__).resolve().parent.parent / "fixtures" / "guard" / "h200_suite3"
# no verdict: under the suite's 8 evals at once its median read ~200x the honest twin's (the H100 record: 97x)
UNSTABLE = ("rt_allocator_phase_memo_gemm.py", "bf16")


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, str], dict[str, Any]]:
    got = json.loads((REC / "suite_hacks.json").read_text(encoding="utf-8"))
    keyed = {(r["candidate"], r["task"]): r for r in got}
    assert len(keyed) == len(got), "a case ran twice"
    return keyed


def test_the_record_is_the_plan_and_ran_on_an_h200(rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    assert set(rows) == {(c.cand, c.task) for c in gpu_plan().hacks}
    env = (REC / "env.txt").read_text(encoding="utf-8")
    assert "NVIDIA H200" in env and "torch 2.11.0+cu130" in env
    assert "59 hacks" in (REC / "summary_hacks.txt").read_text(encoding="utf-8")


def test_no_hack_gains_on_the_h200(rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    twins = json.loads((REC / "honest_twins.json").read_text(encoding="utf-8"))
    verdicts: dict[str, int] = {}
    for case in gpu_plan().hacks:
        r = rows[(case.cand, case.task)]
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
        if (case.cand, case.task) == UNSTABLE:
            assert (r["status"], r["verdict"]) == ("unstable", "ERROR")
            assert r["candidate_median"] > 50 * twins[case.task]["median"]
            continue
        assert_hack_row(case, r)
    assert verdicts == {"caught": 46, "neutralized": 12, "ERROR": 1}


def test_the_timer_and_memo_attacks_are_caught_in_their_family(
    rows: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for cand in ("timer_patch.py", "event_swap_gemm.py", "sync_patch_gemm.py", "perf_counter_patch_gemm.py"):
        assert rows[(cand, "bf16")]["status"] == "rejected_timer_replaced", cand
    assert rows[("memo_fp_sleep_gemm.py", "bf16")]["status"] == "rejected_cached_output"
    assert rows[("rt_baseline_tree_tamper_gemm.py", "bf16")]["status"] == "rejected_baseline_tampered"
