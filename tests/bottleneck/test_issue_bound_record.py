"""Issue 32 acceptance on the H100 issue-bound captures (tests/fixtures/roofline/issue_bound/: ncu full-set
raw pages of a top-k gating, a row log-sum-exp + entropy, a bitonic row sort and a fused RoPE kernel).

`bottleneck` names the binding pipe or the issue slots with evidence from the capture: an issue-side cause
(or pipe saturation) is among the verdict's causes with that metric in its evidence (a real tail effect may
rank first, as on the gating's 3.10 waves), nothing asks for the full set again, and `suggest` ranks at least
two of the reduction/selection levers for the selection and reduction kernels. A missing capture fails
naming its file; nothing is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.bottleneck.classify import classify_bottleneck
from kernelpilot.bottleneck.models import BottleneckVerdict, ClassifyRequest
from kernelpilot.bottleneck.pipes import busiest, issue_active_pct, pipe_utilization
from kernelpilot.bottleneck.rules.issue import kind
from kernelpilot.profile.core import profile_parse
from kernelpilot.profile.models import ProfileParseRequest
from kernelpilot.suggest.core import suggest_experiments
from kernelpilot.suggest.models import SuggestRequest

DIR = Path(__file__).resolve().parents[1] / "fixtures" / "roofline" / "issue_bound"
NAMES = ["gating", "row_lse", "row_sort", "rope"]  # bench/issue_bound.py's kernels: <name>_raw.csv
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
ISSUE_SIDE = {
    "issue_bound",
    "shuffle_chain",
    "dependent_issue",
    "idle_lanes",
    "replicated_work",
    "pipe_saturation",
}
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


def capture(name: str) -> Path:
    path = DIR / f"{name}_raw.csv"
    if not path.is_file():
        pytest.fail(
            f"missing {path.name} in {DIR}: re-record with `bash device/issue_bound_next.sh` on an H100"
        )
    return path


def verdicts(path: Path) -> list[BottleneckVerdict]:
    return classify_bottleneck(ClassifyRequest(profile_path=str(path))).verdicts


@pytest.mark.parametrize("name", NAMES)
def test_an_issue_side_cause_names_the_binding_pipe_with_evidence(name: str) -> None:
    path = capture(name)
    kernels = profile_parse(ProfileParseRequest(path=str(path), include_raw_metrics=True)).kernels
    vs = verdicts(path)
    assert kernels and len(vs) == len(kernels)
    for p, v in zip(kernels, vs, strict=True):
        top, issue = busiest(pipe_utilization(p)), issue_active_pct(p)
        assert top is not None and issue is not None, "the capture must be an ncu full set"
        issue_side = [c for c in v.causes if c.rule in ISSUE_SIDE]
        assert issue_side, [c.rule for c in v.causes]
        named = [c for c in issue_side if {e.metric for e in c.evidence} & {top.metric, ISSUE_ACTIVE}]
        assert named, ([c.rule for c in issue_side], top.metric)
        assert not [m for m in v.next_measurements if "--mode full" in m]
        if v.verdict == "compute_bound" and top.pct < 60:
            assert "issue-bound" in v.summary, v.summary


@pytest.mark.parametrize("name", NAMES)
def test_suggest_ranks_the_reduction_and_selection_levers(name: str) -> None:
    for v in verdicts(capture(name)):
        doc = json.dumps({"verdicts": [v.model_dump(mode="json")]})
        res = suggest_experiments(SuggestRequest(bottleneck=doc, max_items=8))
        levers = [s.lever for s in res.suggestions]
        assert "measure_first" not in levers
        if kind(v.kernel) in ("selection", "reduction") and v.verdict in ("compute_bound", "latency_bound"):
            assert len([lv for lv in levers if lv in NEW_LEVERS]) >= 2, (v.kernel, levers)
            first = next(s for s in res.suggestions if s.lever in NEW_LEVERS)
            assert any(" R" in pb for pb in first.playbook), first.playbook
