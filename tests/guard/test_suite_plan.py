"""The GPU acceptance run (tests/guard/gpu_suite.py, gpu_run.sh) is ready to run in one device call: issue
31's red-team set both ways (at least 30 hacks from the published families, at least 15 honest look-alikes),
every case file present and valid Python, every expectation a real status family, the red team's folder
read from its docstring headers. The CPU plan runs end to end here (`python tests/guard/gpu_suite.py --cpu
OUT`); this test only checks the plans."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest
from tests.guard.gpu_suite import (
    FAMILIES,
    VERDICTS,
    Case,
    cpu_plan,
    entry,
    gpu_plan,
    redteam_cases,
    suite1_plan,
)

from kernelpilot.guard.models import REJECT_STATUSES

HERE = Path(__file__).parent


def _defines(path: Path, name: str) -> bool:
    """The module defines `name` at its top level (a def, or an assignment such as `gemm = candidate`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name == name:
            return True
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
            return True
    return False


def test_the_gpu_plan_has_thirty_hacks_and_fifteen_look_alikes_each_with_a_family() -> None:
    plan = gpu_plan()
    assert len(plan.hacks) >= 30 and len(plan.benign) >= 15
    keys = [(c.cand, c.task) for c in [*plan.hacks, *plan.benign]]
    assert len(keys) == len(set(keys))  # no case twice
    for case in plan.hacks:
        assert not case.honest and case.pattern and case.origin, case
        assert all(s in (*REJECT_STATUSES, "rejected", "failed") for s in case.expect), case
        assert case.family in FAMILIES or case.cand.startswith("rt_"), case  # the red team may name a status
    for case in plan.benign:
        assert case.honest and case.met("improved") and not case.met("rejected_thread"), case
    # every rejection status of the in-process guard but the catch-all has a hack that lands in it first (the
    # isolated judge's own, a clock disagreement and tampered task files, are held by tests/guard/isolated)
    firsts = {c.expect[0] for c in plan.hacks}
    judge_only = {"rejected_nondeterministic", "rejected_timer_disagree", "rejected_task_tampered"}
    assert firsts >= set(REJECT_STATUSES) - judge_only


def test_every_case_file_exists_parses_and_defines_its_task_entry_point() -> None:
    plan = gpu_plan()
    for case in [*plan.hacks, *plan.benign]:
        assert case.task in plan.tasks, case
        path = plan.source(case.cand)
        contract = plan.tasks[case.task][0]
        assert path.is_file() and _defines(path, entry(contract)), case
    for contract, base in plan.tasks.values():
        assert (plan.cases / contract["module"]).is_file() and _defines(plan.cases / base, entry(contract))
        assert _defines(plan.cases / contract["module"], "make_inputs")
        assert _defines(plan.cases / contract["module"], "reference")
    compile_all = [p for p in plan.cases.glob("*.py")]
    for path in compile_all:  # every file of the folder, the ones only issue 25's record names too
        compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_the_published_patterns_the_issue_names_are_in_the_plan() -> None:
    plan = gpu_plan()
    hacks = {c.cand: c for c in plan.hacks}
    benign = {c.cand for c in plan.benign}
    for cand in ("memo_fp_sleep_gemm.py", "memo_ptr_sleep_gemm.py", "memo_shape_rmsnorm.py",
                 "checksum_memo_gemm.py", "callcount_gemm.py", "graphskip_gemm.py", "thread_low_gemm.py",
                 "event_swap_gemm.py", "dispatch_lazy_gemm.py", "stats_patch_gemm.py", "sync_patch_gemm.py",
                 "perf_counter_patch_gemm.py", "async_side_write_gemm.py", "host_copy_gemm.py",
                 "graph_stale_gemm.py", "expand_rmsnorm.py", "env_sniff_gemm.py", "stack_aware.py",
                 "fp8_gemm.py", "bf16_fp32_gemm.py", "tf32_gemm.py", "input_view_rmsnorm.py"):  # fmt: skip
        assert cand in hacks, cand
    for fam in ("memo_fp_sleep_gemm.py", "memo_ptr_sleep_gemm.py", "memo_shape_rmsnorm.py"):
        assert hacks[fam].family == "memo" and "rejected_timed_output" in hacks[fam].expect
    for cand in ("compile_rmsnorm.py", "compile_ro_rmsnorm.py", "cudagraph_gemm.py",
                 "triton_autotune_gemm.py", "out_buffer_gemm.py", "persistent_rmsnorm.py",
                 "inline_rmsnorm.py", "cublaslt_gemm.py",
                 "side_stream_synced.py", "inplace_add.py", "logging_rmsnorm.py", "warmup_gemm.py",
                 "fused_rmsnorm.py", "triton_rmsnorm.py", "fp32acc_rmsnorm.py"):  # fmt: skip
        assert cand in benign, cand
    assert plan.tasks["inplace"][0]["in_place"] == [0]  # the declared in-place look-alike's task
    norm = plan.tasks["rmsnorm"][0]
    assert norm["dtype"] == "bf16" and norm["shapes"][0] == {"rows": 8192, "cols": 4096}
    assert norm["roofline"]["op"] == "rmsnorm"
    assert "fp32" in plan.warm  # the graph-capture skip needs a timing that captures
    assert set(plan.warmups) >= {"compile_rmsnorm.py", "compile_ro_rmsnorm.py", "inline_rmsnorm.py"}


def test_an_accepted_hack_is_neutralized_unless_faster_than_its_honest_twin_beyond_the_spread() -> None:
    """Issue 31's first H100 run: 16 hacks at once read the slow baseline at 5-23 ms, so `improved` there
    said nothing; the verdict holds the hack against the task's honest twin, both timed alone."""
    from tests.guard.gpu_suite import gain_verdict, memo_hits

    memo = Case("m.py", "bf16", "memo", "memo")
    twin = {"median": 175.0, "iqr": 1.0}
    row = {"status": "improved", "ok": memo.met("improved"), "candidate_median": 7584.0}
    assert not row["ok"]
    got = gain_verdict(memo, dict(row), twin)  # slower than honest: gained nothing
    assert got["verdict"] == "neutralized" and got["ok"] and got["cand_from"] == "eval"
    got = gain_verdict(memo, {**row, "alone_median": 174.0, "alone_iqr": 0.5}, twin)  # within the spread
    assert got["verdict"] == "neutralized" and got["ok"] and got["cand_from"] == "alone"
    got = gain_verdict(memo, {**row, "alone_median": 150.0, "alone_iqr": 0.5}, twin)  # the guard failed
    assert got["verdict"] == "WIN" and not got["ok"] and got["honest_median"] == 175.0
    assert gain_verdict(memo, dict(row), None)["verdict"].startswith("?")
    caught = gain_verdict(memo, {"status": "rejected_nondeterministic", "ok": True}, twin)
    assert caught["verdict"] == "caught"  # a memo whose remembered bits differ from a fresh answer
    other = gain_verdict(memo, {"status": "rejected_thread", "ok": False}, twin)
    assert other["verdict"] == "caught (other status)" and not other["ok"]
    forge = Case("f.py", "bf16", "forge", "forge")
    assert gain_verdict(forge, {"status": "failed", "ok": True}, twin)["verdict"] == "caught"
    assert memo_hits({}, "hhm") == {"memo_hits": 2, "memo_calls": 3}
    assert memo.met("rejected_cached_output") and not memo.met("rejected_thread")
    assert Case("r.py", "bf16", "rejected", "any").met("rejected_side_stream")
    assert all(v in VERDICTS for v in ("improved", "neutral", "regressed"))


def test_compare_is_skipped_only_where_eval_reads_more_than_3x_faster() -> None:
    from tests.guard.gpu_suite import last_json, needs_compare

    assert not needs_compare({"status": "improved", "ratio_ci": [0.06, 0.07]})
    assert needs_compare({"status": "improved", "ratio_ci": [0.37, 0.38]})
    assert needs_compare({"status": "regressed", "ratio_ci": [1.14, 1.15]})
    assert needs_compare({"status": "improved", "ratio_ci": None})
    printed = 'rmsnorm candidate loaded\n{\n  "result": {"verdict": "regressed"}\n}\n'
    assert last_json(printed) == {"result": {"verdict": "regressed"}}  # a candidate printed first
    assert last_json("no json") is None


def test_red_team_files_join_the_plan_by_their_docstring_headers(tmp_path: Path) -> None:
    (tmp_path / "cheat.py").write_text(
        '"""Replays the last output.\n\ntask: gemm\nexpect: memo\n"""\n\ndef gemm(a, b):\n    return a @ b\n'
    )
    (tmp_path / "fine.py").write_text('"""An honest one.\ntask: rmsnorm\nexpect: accepted\n"""\n')
    (tmp_path / "_helper.py").write_text("X = 1\n")
    cases = {c.cand: c for c in redteam_cases(tmp_path)}
    assert set(cases) == {"rt_cheat.py", "rt_fine.py"}
    assert cases["rt_cheat.py"].task == "bf16" and cases["rt_cheat.py"].family == "memo"
    assert cases["rt_fine.py"].honest and cases["rt_fine.py"].task == "rmsnorm"
    plan = gpu_plan(tmp_path)
    assert "rt_cheat.py" in {c.cand for c in plan.hacks} and "rt_fine.py" in {c.cand for c in plan.benign}
    assert {p.name for p in plan.extra} == {"cheat.py", "fine.py"}
    assert redteam_cases(tmp_path / "missing") == []  # no red-team folder is fine
    (tmp_path / "helper.py").write_text('"""No headers: a helper, not a case."""\n')
    assert len(redteam_cases(tmp_path)) == 2
    (tmp_path / "bad.py").write_text('"""expect: rejected_thread\nno task line\n"""\n')
    with pytest.raises(SystemExit, match="task:"):
        redteam_cases(tmp_path)


def test_the_suite_splits_into_two_calls_and_writes_a_table() -> None:
    from tests.guard.gpu_suite import part, table

    hacks, honest = part(gpu_plan(), "hacks"), part(gpu_plan(), "honest")
    assert not hacks.benign and not honest.hacks and "inplace" not in hacks.tasks
    assert len(hacks.hacks) + len(honest.benign) == len(gpu_plan().hacks) + len(gpu_plan().benign)
    with pytest.raises(SystemExit):
        part(gpu_plan(), "some")
    rows = [{"candidate": "a.py", "pattern": "p", "task": "bf16", "expect": "accepted", "status": "improved",
             "ok": True, "ratio_median": 0.5, "ratio_ci": [0.49, 0.51], "compare_verdict": "improved",
             "verdict": "accepted", "candidate_median": 176.5},
            {"candidate": "m.py", "pattern": "m", "task": "bf16", "expect": "memo", "status": "neutral",
             "ok": True, "neutralized": True, "memo_hits": 1, "memo_calls": 300, "verdict": "neutralized",
             "alone_median": 180.0, "honest_median": 175.0}]  # fmt: skip
    text = table(rows)
    assert "| 0.500 (0.490..0.510) | improved |" in text
    assert "| neutralized | yes | 180.0 us alone | 175.0 us |" in text
    assert "| accepted | yes | 176.5 us | - |" in text
    assert "memo hits 1/300 calls" in text and len(text.splitlines()) == 4


def test_the_recorded_issue_25_plan_is_kept_for_its_record() -> None:
    old = suite1_plan()
    assert len(old.hacks) == 12 and len(old.benign) == 6
    for cand, *_ in [*old.hacks, *old.benign]:
        assert (HERE / "gpu_cases" / cand).is_file(), cand


def test_the_cpu_plan_names_real_files_and_statuses() -> None:
    plan = cpu_plan()
    for case in plan.hacks:
        assert (plan.cases / case.cand).is_file() and case.task in plan.tasks
        assert all(s in REJECT_STATUSES for s in case.expect), case
    for case in plan.benign:
        assert (plan.cases / case.cand).is_file() and case.task in plan.tasks and case.honest


def test_the_driver_script_parses_and_runs_the_suite_first() -> None:
    res = subprocess.run(
        ["bash", "-n", str(HERE / "gpu_run.sh")], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr
    text = (HERE / "gpu_run.sh").read_text()
    suite = text.index('timeout "$SUITE_S" python3 tests/guard/gpu_suite.py')
    overhead = text.index('bench_step overhead 110 python3 bench/guard_overhead.py --reps "$REPS"')
    assert suite < overhead < text.index("bench_step breakdown 100 python3 bench/guard_breakdown.py --reps 3")
    assert "KP_SUITE_ONLY" in text and "KP_SUITE_BUDGET_S" in text
