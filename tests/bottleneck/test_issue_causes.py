"""Issue- and latency-side causes (kernelpilot.bottleneck.rules.issue) on real H100 full-set captures
(tests/fixtures/profile/ncu and rootcause/full), and the guarantees of issue 32: a classified verdict on
a full-set profile never has `causes: []` (what was ruled out is evidence), never asks for the mode it was
given, and `suggest` never answers "not classified" to it.

`issue_bound` and the SHFL path of `shuffle_chain` have no firing capture among these kernels (none is
issue-bound); their firing cases are the H100 issue-bound captures (test_issue_bound_record.py) and, here,
a boundary case on a real capture with one value moved across the threshold (said so at the test).
"""

from __future__ import annotations

import csv
import functools
import json
from pathlib import Path

import pytest

from kernelpilot.bottleneck.classify import classify_bottleneck, memory_stop
from kernelpilot.bottleneck.models import BottleneckVerdict, ClassifyRequest
from kernelpilot.bottleneck.pipes import issue_active_pct, pipe_utilization
from kernelpilot.bottleneck.rules import RULES, Ctx
from kernelpilot.bottleneck.rules.base import Clear, Finding
from kernelpilot.bottleneck.rules.issue import RULES as ISSUE_RULES
from kernelpilot.bottleneck.rules.issue import kind
from kernelpilot.profile.core import profile_parse
from kernelpilot.profile.models import KernelProfile, ProfileParseRequest, ProfileResult
from kernelpilot.suggest.core import BY_ID, suggest_experiments
from kernelpilot.suggest.models import SuggestRequest
from kernelpilot.suggest.playbook import SECTIONS

PROF = Path(__file__).resolve().parents[1] / "fixtures" / "profile"
NCU, RC = PROF / "ncu", PROF / "rootcause" / "full"
FULL_SETS = sorted(RC.glob("*_raw.csv")) + sorted(p for p in NCU.glob("*_raw.csv") if "_base" not in p.name)
NEW_LEVERS = {
    "fewer_instructions",
    "cancel_softmax_denominator",
    "packed_key_selection",
    "warp_selection_rounds",
    "network_selection",
    "row_mapping",
    "fewer_shuffle_steps",
    "avoid_replicated_epilogue",
}


def profile(path: Path) -> KernelProfile:
    (p,) = profile_parse(ProfileParseRequest(path=str(path), include_raw_metrics=True)).kernels
    return p


def ctx(path: Path, isa: dict[str, object] | None = None, p: KernelProfile | None = None) -> Ctx:
    p = p or profile(path)
    return Ctx(p=p, where=str(path), isa=isa or {}, stop=memory_stop(p, [], []))


def rule(name: str):  # type: ignore[no-untyped-def]
    (r,) = [x for x in ISSUE_RULES if x.name == name]
    return r


def source_shuffles(kernel: str) -> dict[str, object]:
    """Executed SHFL and total warp instructions from the capture's own SASS source page."""
    rows = list(csv.reader((NCU / f"{kernel}_source.csv").open()))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    body = [r for r in rows[start + 1 :] if r and r[0].startswith("0x")]
    return {
        "shuffles": sum(float(r[5]) for r in body if "SHFL" in r[1]),
        "instructions": sum(float(r[5]) for r in body),
    }


@functools.cache
def verdict(path: Path) -> BottleneckVerdict:
    (v,) = classify_bottleneck(ClassifyRequest(profile_path=str(path))).verdicts
    return v


def suggest(v: BottleneckVerdict) -> list[str]:
    doc = json.dumps({"verdicts": [v.model_dump(mode="json")]})
    return [s.lever for s in suggest_experiments(SuggestRequest(bottleneck=doc, max_items=12)).suggestions]


# ------------------------------------------------------------------ the rules on real captures


def test_pipes_read_from_the_capture() -> None:
    p = profile(NCU / "sync_reduce_raw.csv")
    pipes = pipe_utilization(p)
    assert pipes["lsu"].pct == pytest.approx(71.311106) and pipes["lsu"].metric.startswith(
        "sm__inst_executed"
    )
    assert pipes["alu"].metric == "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"
    assert issue_active_pct(p) == pytest.approx(40.32734)


def test_pipes_from_the_profile_field_when_the_parser_gives_them() -> None:
    """KernelProfile.pipes (profile layer) is read first; a JSON profile without raw metrics keeps them."""
    p = profile(NCU / "sync_reduce_raw.csv")
    assert p.pipes, "the ncu parser fills KernelProfile.pipes"
    slim = KernelProfile.model_validate({**p.model_dump(), "raw_metrics": {}, "raw_units": {}})
    got = pipe_utilization(slim)
    assert got["lsu"].pct == pytest.approx(pipe_utilization(p)["lsu"].pct, rel=1e-6)


def test_dependent_issue_fires_on_a_dependent_fma_chain() -> None:
    got = rule("dependent_issue").check(ctx(RC / "dep_chain_lowocc_raw.csv"))
    assert isinstance(got, Finding) and got.value == pytest.approx(90, abs=1)
    assert got.levers[0] == "increase_ilp" and "low ILP" in got.quantity  # kind 'other': no row levers
    assert isinstance(rule("dependent_issue").check(ctx(RC / "copy_f4_raw.csv")), Clear)


def test_idle_lanes_fires_on_the_masked_shared_memory_tree() -> None:
    got = rule("idle_lanes").check(ctx(NCU / "sync_reduce_raw.csv"))
    assert isinstance(got, Finding) and got.value == pytest.approx(17.03)
    assert got.gain_pct == pytest.approx(40.32734 * (1 - 17.03 / 32), rel=1e-4)
    assert got.levers[0] == "warp_shuffles"  # kind 'reduction': the tree goes to shuffles first
    assert isinstance(rule("idle_lanes").check(ctx(RC / "xu_heavy_raw.csv")), Clear)


def test_shuffle_chain_clears_where_shuffles_are_a_small_share() -> None:
    """softmax_rows' executed SHFL are 1.4% of its instructions (long rows: loads and exps dominate)."""
    facts = source_shuffles("softmax_rows")
    assert facts == {"shuffles": 737280.0, "instructions": 51757056.0}
    got = rule("shuffle_chain").check(ctx(NCU / "softmax_rows_raw.csv", facts))
    assert isinstance(got, Clear) and "SHFL 1%" in got.reason
    assert isinstance(rule("shuffle_chain").check(ctx(RC / "copy_f4_raw.csv")), Clear)


def test_shuffle_chain_fires_when_shuffles_are_the_work() -> None:
    """Boundary case: softmax_rows' real profile with an ISA count where SHFL are 20% of the instructions
    (the H100 issue-bound captures hold the real firing case)."""
    got = rule("shuffle_chain").check(
        ctx(NCU / "softmax_rows_raw.csv", {"shuffles": 20, "instructions": 100})
    )
    assert isinstance(got, Finding) and got.value == pytest.approx(20.0)
    assert got.levers[0] == "fewer_shuffle_steps" and got.gain_pct is not None


def test_replicated_work_against_the_algorithms_count() -> None:
    """softmax_rows: 8192 x 4096 elements, 51.76 M warp instructions x 29.06 active threads = 44.9 thread
    instructions per element; against 15 per element (three passes) it is replicated 3x, against 30 not."""
    facts = {"elements": 8192 * 4096, "algorithm_inst_per_element": 15}
    got = rule("replicated_work").check(ctx(NCU / "softmax_rows_raw.csv", facts))
    assert isinstance(got, Finding) and got.value == pytest.approx(
        51757056 * 29.06 / (8192 * 4096) / 15, rel=1e-4
    )
    assert got.levers[0] == "avoid_replicated_epilogue"
    facts["algorithm_inst_per_element"] = 30
    assert isinstance(rule("replicated_work").check(ctx(NCU / "softmax_rows_raw.csv", facts)), Clear)


def test_issue_bound_clears_on_real_captures_and_fires_past_the_threshold() -> None:
    """local_reg: issue 83% with ALU 78% is pipe_saturation's case; dep_chain: issue 27%. Boundary case: the
    same real local_reg profile with its ALU utilization moved to 45% is issue-bound."""
    r = rule("issue_bound")
    sat = r.check(ctx(RC / "local_reg_raw.csv"))
    assert isinstance(sat, Clear) and "pipe_saturation" in sat.reason
    assert isinstance(r.check(ctx(NCU / "dep_chain_raw.csv")), Clear)
    p = profile(RC / "local_reg_raw.csv")
    raw = dict(p.raw_metrics)
    for m in (
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    ):
        raw[m] = 45.0
    got = r.check(ctx(RC / "local_reg_raw.csv", p=p.model_copy(update={"raw_metrics": raw, "pipes": []})))
    assert isinstance(got, Finding) and got.value == pytest.approx(issue_active_pct(p) or 0)
    assert "issue roof" in got.quantity and got.levers[0] == "fewer_instructions"


def test_lever_sets_follow_the_kernel_kind() -> None:
    assert kind("topk_gating_kernel") == "selection" and kind("moe_router_softmax_topk") == "selection"
    assert kind("softmax_rows") == "reduction" and kind("rmsnorm_fwd") == "reduction"
    assert kind("fused_rope") == "other"
    for r in ISSUE_RULES:
        assert r.source.startswith("http") and r.reads
    assert not NEW_LEVERS - set(SECTIONS) and not NEW_LEVERS - set(BY_ID)


# ------------------------------------------------------------------ issue 32's guarantees


@pytest.mark.parametrize("path", FULL_SETS, ids=lambda p: p.name)
def test_full_set_verdicts_have_causes_and_never_ask_for_the_full_set(path: Path) -> None:
    v = verdict(path)
    assert v.verdict != "unknown"
    assert v.causes, (v.kernel, v.ruled_out)
    assert not [m for m in v.next_measurements if "--mode full" in m], v.next_measurements


def test_no_rule_fired_names_what_was_ruled_out() -> None:
    v = verdict(NCU / "softmax_rows_raw.csv")
    (c,) = v.causes
    assert c.rule == "verdict_levers" and c.gain_pct is None and c.levers[0] == "increase_ilp"
    ruled = {e.metric.removeprefix("ruled_out.") for e in c.evidence}
    assert ruled == {r.split(":", 1)[0] for r in v.ruled_out} and {"issue_bound", "pipe_saturation"} <= ruled
    assert all(e.value for e in c.evidence)


def test_profile_json_without_raw_metrics_is_told_how_to_keep_them() -> None:
    """issue 32 v1: a `profile run --json` result (no raw metrics) was told to run `--mode full` again."""
    res = profile_parse(ProfileParseRequest(path=str(NCU / "softmax_rows_raw.csv")))
    doc = res.model_dump(mode="json")
    for k in doc["kernels"]:
        k["pipes"] = []  # as a JSON saved before the profile layer carried pipes
    (v,) = classify_bottleneck(ClassifyRequest(profile_json=json.dumps(doc))).verdicts
    assert not [m for m in v.next_measurements if "--mode full" in m]
    assert any("--include-raw-metrics" in m for m in v.next_measurements)
    ProfileResult.model_validate(doc)


@pytest.mark.parametrize("path", FULL_SETS, ids=lambda p: p.name)
def test_suggest_never_answers_not_classified_to_a_classified_verdict(path: Path) -> None:
    v = verdict(path)
    doc = json.dumps({"verdicts": [v.model_dump(mode="json")]})
    res = suggest_experiments(SuggestRequest(bottleneck=doc, max_items=12))
    assert res.suggestions
    for s in res.suggestions:
        assert s.lever != "measure_first" and "not classified" not in s.title
        assert not [e for e in s.evidence if "--mode full" in e]


def test_small_gain_causes_still_get_the_verdicts_levers() -> None:
    """Every firing cause below the noise gain: suggest used to answer measure_first ('not classified')."""
    v = verdict(NCU / "softmax_rows_raw.csv")
    small = v.causes[0].model_copy(update={"gain_pct": 1.0, "levers": ["increase_ilp"]})
    doc = json.dumps({"verdicts": [v.model_copy(update={"causes": [small]}).model_dump(mode="json")]})
    levers = [s.lever for s in suggest_experiments(SuggestRequest(bottleneck=doc)).suggestions]
    assert levers[0] == "increase_ilp" and "measure_first" not in levers
    assert {"fuse_kernels", "vectorize_loads"} & set(levers)  # memory_bound's own table levers follow


def test_reduction_kernel_gets_the_new_playbook_levers() -> None:
    levers = suggest(verdict(NCU / "sync_reduce_raw.csv"))
    assert len([lv for lv in levers if lv in NEW_LEVERS]) >= 2, levers
    assert levers[0] in NEW_LEVERS | {"warp_shuffles"}


def test_issue_rules_are_registered() -> None:
    names = {r.name for r in RULES}
    assert {r.name for r in ISSUE_RULES} <= names


def test_a_busy_pipe_on_a_row_op_gets_the_row_op_levers() -> None:
    """sync_reduce's LSU is 71% busy with shared-memory tree traffic: warp shuffles, not wider global loads
    (the GEMM/streaming levers the pipe rule gives other kernels)."""
    (sat,) = [c for c in verdict(NCU / "sync_reduce_raw.csv").causes if c.rule == "pipe_saturation"]
    assert sat.levers == ["warp_shuffles", "row_mapping"] and "lsu pipe 71.3% busy" in sat.quantity
    (xu,) = [c for c in verdict(RC / "xu_heavy_raw.csv").causes if c.rule == "pipe_saturation"]
    assert xu.levers == ["cheaper_instructions"]  # not a row op: unchanged


def test_profile_json_with_pipes_but_no_raw_metrics() -> None:
    """A full-set `profile parse --json` without raw metrics: pipes and stalls still give a verdict with
    causes; the advice is to keep the raw metrics, never to profile the full set again."""
    res = profile_parse(ProfileParseRequest(path=str(NCU / "sync_reduce_raw.csv")))
    (v,) = classify_bottleneck(ClassifyRequest(profile_json=res.model_dump_json())).verdicts
    assert v.verdict != "unknown" and v.causes
    assert not [m for m in v.next_measurements if "--mode full" in m]
    assert any("--include-raw-metrics" in m for m in v.next_measurements)


@pytest.mark.parametrize(
    ("name", "first"),
    [("topk_gating", "cancel_softmax_denominator"), ("row_reduce", "avoid_replicated_epilogue")],
)
def test_issue_bound_selection_and_reduction_end_to_end(name: str, first: str) -> None:
    """Boundary case until the H100 issue-bound captures land: local_reg's real full set (issue 83%) with its
    ALU utilization moved to 45% and the kernel named as a selection / reduction op. The verdict says
    issue-bound, and suggest ranks the new playbook levers with their R sections first."""
    from kernelpilot.bottleneck.classify import classify_profile

    p = profile(RC / "local_reg_raw.csv")
    raw = dict(p.raw_metrics)
    for m in (
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    ):
        raw[m] = 45.0
    p = p.model_copy(update={"raw_metrics": raw, "pipes": [], "kernel": name})
    v = classify_profile(p, str(RC / "local_reg_raw.csv"))
    assert v.verdict == "compute_bound" and v.summary.startswith("issue-bound"), v.summary
    assert "issue_bound" in [c.rule for c in v.causes]  # beside local_reg's own 32-bit loads
    doc = json.dumps({"verdicts": [v.model_dump(mode="json")]})
    res = suggest_experiments(SuggestRequest(bottleneck=doc))
    new = [s for s in res.suggestions if s.lever in NEW_LEVERS]
    assert len(new) >= 2 and new[0].lever == first, [s.lever for s in res.suggestions]
    assert any(" R2." in pb or " R7." in pb for pb in new[0].playbook), new[0].playbook
