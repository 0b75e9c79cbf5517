"""Issue 31's acceptance runs as recorded on the H100 (tests/fixtures/guard/h100_suite2, PROVENANCE.md there),
held against the suite's own plan so the record and the cases cannot drift apart.

Two device calls: `suite_hacks.json` (every hack of the plan on the final guard: each is rejected with a
status of its family, or accepted no faster than the task's honest twin timed alone: neutralized, it gained
nothing, never a WIN) and `suite_honest.json` (the honest look-alikes on the guard of the first round, before
the interior perturbation and the torch-op watch list: each accepted, judged paired, agreeing with
`kernelpilot compare`). The session's device time ran out before the honest half could run again on the
final guard: the look-alikes it did not reach are named in NOT_RUN, so the gap is in the test, not hidden.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.guard.gpu_suite import VERDICTS, gpu_plan
from tests.guard.suite_records import assert_hack_row

REC = Path(__file__).resolve().parent.parent / "fixtures" / "guard" / "h100_suite2"
# Look-alikes the honest call skipped (the suite's time budget; then no device time was left).
NOT_RUN = {
    ("fp32acc_rmsnorm.py", "rmsnorm"), ("fused_rmsnorm.py", "rmsnorm"), ("honest_gemm.py", "fp32"),
    ("rt_honest_cached_handle_gemm.py", "bf16"), ("rt_honest_logging_thread_gemm.py", "bf16"),
    ("rt_honest_preallocated_out_gemm.py", "bf16"), ("triton_rmsnorm.py", "rmsnorm"),
    ("warmup_gemm.py", "bf16"),
}  # fmt: skip
# Rejected under another family than the case declares: the address memo also ran its product where the
# timer does not look (the trace saw 1332 us of device work per call against 175.9 us timed).
OTHER_FAMILY = {("rt_addr_memo_gemm.py", "bf16"): "rejected_side_stream"}
# The honest call's compare of logging_rmsnorm could not be read: its printed lines came before the JSON
# (fixed in gpu_suite.py after the run); eval's own verdict is paired and accepted.
COMPARE_UNREAD = {("logging_rmsnorm.py", "rmsnorm")}


def _load(name: str) -> dict[tuple[str, str], dict[str, Any]]:
    got = json.loads((REC / name).read_text(encoding="utf-8"))
    keyed = {(r["candidate"], r["task"]): r for r in got}
    assert len(keyed) == len(got), "a case ran twice"
    return keyed


@pytest.fixture(scope="module")
def rows() -> dict[tuple[str, str], dict[str, Any]]:
    hacks = _load("suite_hacks.json")
    honest = {k: v for k, v in _load("suite_honest.json").items() if k not in hacks}
    return {**honest, **hacks}


def test_the_record_is_the_plan_and_ran_on_an_h100(rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    plan = gpu_plan()
    assert set(_load("suite_hacks.json")) == {(c.cand, c.task) for c in plan.hacks}
    benign = {(c.cand, c.task) for c in plan.benign}
    assert benign >= NOT_RUN and set(rows) == {(c.cand, c.task) for c in plan.hacks} | (benign - NOT_RUN)
    assert len(plan.hacks) >= 30 and len(plan.benign) >= 15
    for env in ("env.txt", "env_honest.txt"):
        assert "H100" in (REC / env).read_text(encoding="utf-8")


def test_every_hack_is_rejected_with_its_family(rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    for case in gpu_plan().hacks:
        r = rows[(case.cand, case.task)]
        assert r["verdict"] != "WIN", (case.cand, r["status"], str(r.get("evidence"))[:300])
        if r["status"] == "unstable":  # no verdict; its median under contention was 97x the honest twin's
            assert (case.cand, r["verdict"]) == ("rt_allocator_phase_memo_gemm.py", "ERROR")
            twins = json.loads((REC / "honest_twins.json").read_text(encoding="utf-8"))
            assert r["candidate_median"] > 50 * twins[case.task]["median"]
            continue
        if (case.cand, case.task) in OTHER_FAMILY:
            assert r["status"] == OTHER_FAMILY[(case.cand, case.task)], case.cand
            assert r["record"]["rejection"]["evidence"], case.cand
            continue
        assert_hack_row(case, r)


def test_the_issue_memos_padded_above_the_floor_are_caught(
    rows: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """Keyed on pointers only it hits on every timed call: rejected. Keyed on pointers and 8 values, fresh
    values under the timer make it miss (neutralized) or it is rejected; never accepted while hitting."""
    ptr = rows[("memo_ptr_sleep_gemm.py", "bf16")]
    assert ptr["status"].startswith("rejected_") and not ptr.get("neutralized")
    shape = rows[("memo_shape_rmsnorm.py", "rmsnorm")]
    assert shape["status"].startswith("rejected_")
    fp = rows[("memo_fp_sleep_gemm.py", "bf16")]  # the interior perturbation: same buffers, new values
    assert fp["status"] == "rejected_cached_output" and "away from the ends" in fp["evidence"]


def test_every_look_alike_is_accepted_paired_and_agrees_with_compare(
    rows: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for case in gpu_plan().benign:
        if (case.cand, case.task) in NOT_RUN:
            continue
        r = rows[(case.cand, case.task)]
        assert r["status"] in VERDICTS, (case.cand, r["status"], str(r.get("evidence"))[:300])
        assert r["method"] == "paired" and r["ratio_ci"] is not None, case.cand
        if (case.cand, case.task) in COMPARE_UNREAD:
            assert r["compare_verdict"] == "?"
            continue
        assert r["compare_agrees"], (case.cand, r["compare_verdict"])
        if r["compare_verdict"].startswith("skipped"):  # eval read it more than 3x faster
            assert r["status"] == "improved" and r["ratio_ci"][1] < 1 / 3, case.cand
        else:
            assert r["compare_verdict"] == r["status"], (case.cand, r["compare_verdict"])


def test_compile_and_graph_candidates_pass_with_the_same_contract(
    rows: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for key in (("compile_rmsnorm.py", "rmsnorm"), ("compile_ro_rmsnorm.py", "rmsnorm"),
                ("cudagraph_gemm.py", "bf16"), ("out_buffer_gemm.py", "bf16")):  # fmt: skip
        assert rows[key]["status"] in VERDICTS, (key, rows[key]["status"])
