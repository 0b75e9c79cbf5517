"""The selection check (contract `selection`, `guard.selection`): a top-k gating whose ties any order may
break passes, a wrong expert fails, and the other semantic checks still name tuple outputs (numpy
contracts in tests/guard/cases/contract_topk.py; the torch/GPU cases are tests/guard/gpu_cases/*topk*)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelpilot.guard.backend import NumpyBackend
from kernelpilot.guard.errors import ContractError
from kernelpilot.guard.harness import run_checks
from kernelpilot.guard.models import Contract, Selection
from kernelpilot.guard.selection import Spec, align, resolve, timed_view

CASES = Path(__file__).parent / "cases"
TOPK: dict[str, Any] = {
    "module": "contract_topk.py",
    "shapes": [{"t": 512, "e": 32, "k": 4}, {"t": 77, "e": 24, "k": 3}],
    "dtype": "fp32",
    "selection": {"values": 0, "ids": 1, "k": "k", "order": "descending"},
}


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, CASES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_topk_that_breaks_ties_differently_passes() -> None:
    contract = _load("contract_topk")
    logits, k = contract.make_inputs({"t": 512, "e": 32, "k": 4}, "fp32", 0, "cpu")
    _, ref_ids, _ = contract.reference(logits.astype(np.float64), k)
    _, ids = _load("topk_ties").gate(logits, k)
    differ = int((np.sort(ids, -1) != np.sort(ref_ids, -1)).any(-1).sum())
    assert differ > 50  # the ties really are broken differently: an exact id check would reject it
    report = run_checks(Contract(candidate="topk_ties.py:gate", **TOPK), CASES)
    assert report.rejection is None and not report.error, report
    assert len(report.calls) == 4 and all(c.ok for c in report.calls)
    assert len(report.timed_refs) == 2  # the timed outputs are still sampled (sorted values)


def test_the_fp32_reference_itself_passes_against_float64() -> None:
    """The baseline skill's self-check: the reference computed in the declared dtype, under the selection
    check, against the float64 one (exact top-k ids would fail on the rows whose tails underflow)."""
    report = run_checks(Contract(candidate="topk_honest.py:gate", **TOPK), CASES)
    assert report.rejection is None and not report.error, report


@pytest.mark.parametrize(
    ("candidate", "status", "evidence"),
    [
        ("topk_wrong.py:gate", "rejected_wrong_output", "below the k-th by more than the tie tolerance"),
        ("topk_cached.py:gate", "rejected_cached_output", "earlier call with different input values"),
        ("topk_lowp.py:gate", "rejected_precision", "within the tolerance of tf32/fp16"),
    ],
)
def test_a_wrong_expert_and_the_hacks_are_rejected(candidate: str, status: str, evidence: str) -> None:
    report = run_checks(Contract(candidate=candidate, **TOPK), CASES)
    assert report.rejection is not None, report
    assert report.rejection.status == status, report.rejection
    assert evidence in report.rejection.evidence


def _spec(**sel: Any) -> Spec:
    return Spec(Selection(**{"values": 0, "ids": 1, "k": 2, **sel}), 2, 1e-6, "fp32")


def _ref(scores: list[list[float]], ids: list[list[int]]) -> tuple[Any, Any, Any]:
    s = np.array(scores)
    i = np.array(ids)
    return np.take_along_axis(s, i, -1), i, s


def test_ids_are_sets_with_ties_and_every_clear_winner_chosen() -> None:
    be = NumpyBackend()
    ref = _ref([[0.5, 0.3, 0.3, 0.1]], [[0, 1]])
    tie = align(be, _spec(), (np.array([[0.5, 0.3]], np.float32), np.array([[0, 2]])), ref)
    assert not tie.why  # expert 2 ties expert 1
    missed = align(be, _spec(k=2), (np.array([[0.3, 0.3]], np.float32), np.array([[1, 2]])), ref)
    assert "below the k-th" in missed.why or "leave out" in missed.why
    dup = align(be, _spec(), (np.array([[0.5, 0.5]], np.float32), np.array([[0, 0]])), ref)
    assert "repeat an id" in dup.why
    oob = align(be, _spec(), (np.array([[0.5, 0.3]], np.float32), np.array([[0, 9]])), ref)
    assert "outside [0, 4)" in oob.why


def test_order_rules_and_smallest() -> None:
    be = NumpyBackend()
    ref = _ref([[0.5, 0.3, 0.2, 0.1]], [[0, 1]])
    swapped = (np.array([[0.3, 0.5]], np.float32), np.array([[1, 0]]))
    assert not align(be, _spec(order="any"), swapped, ref).why
    assert "descending order" in align(be, _spec(order="descending"), swapped, ref).why
    low = _ref([[0.5, 0.3, 0.2, 0.1]], [[3, 2]])
    got = (np.array([[0.1, 0.2]], np.float32), np.array([[3, 2]]))
    assert not align(be, _spec(largest=False, order="ascending"), got, low).why


def test_values_are_matched_by_rank_of_the_reference_score() -> None:
    be = NumpyBackend()
    ref = _ref([[0.5, 0.3, 0.3, 0.1]], [[0, 1]])
    got = align(be, _spec(), (np.array([[0.3, 0.5]], np.float32), np.array([[2, 0]])), ref)
    assert not got.why
    assert got.cand_values[0].tolist() == pytest.approx(got.ref_values[0].tolist())


def test_timed_view_sorts_the_values_and_drops_ids_only() -> None:
    sel = Selection(values=0, ids=1, k=2)
    out = (np.array([[0.2, 0.7], [0.9, 0.1]]), np.array([[1, 0], [0, 1]]))
    assert timed_view(sel, out).tolist() == [[0.2, 0.7], [0.1, 0.9]]
    assert timed_view(Selection(ids=0, k=2), np.array([[1, 0]])) is None
    assert timed_view(None, out) is out


def test_bad_selection_contracts_are_typed_errors() -> None:
    base = {"module": "m.py", "candidate": "c.py:f", "shapes": [{"t": 4}], "dtype": "fp32"}
    with pytest.raises(ContractError, match="not a positive number or a key"):
        resolve(Contract(**base, selection={"values": 0, "ids": 1, "k": "k"}), {"t": 4}, 1e-6, "fp32")
    with pytest.raises(ContractError, match="cannot declare `out`"):
        resolve(Contract(**base, out=True, selection={"ids": 0, "k": 2}), {"t": 4}, 1e-6, "fp32")
    with pytest.raises(ContractError, match="name the same output"):
        resolve(Contract(**base, selection={"values": 0, "ids": 0, "k": 2}), {"t": 4}, 1e-6, "fp32")


def test_timed_outputs_of_a_tie_breaking_candidate_match_the_reference() -> None:
    """What the timing process samples (`guard.timed.TimedCall.last`: the sorted values) against the
    harness's timed references: a candidate with other tied ids is not `rejected_timed_output`; a cached
    answer under the timer is."""
    from kernelpilot.guard.backend import fingerprint_of
    from kernelpilot.guard.models import Observation
    from kernelpilot.guard.observe import judge_outputs
    from kernelpilot.guard.timed import TIMING_SEED, TimedCall

    contract = Contract(candidate="topk_ties.py:gate", **TOPK)
    report = run_checks(contract, CASES)
    make, gate = _load("contract_topk").make_inputs, _load("topk_ties").gate
    sets = [make(contract.shapes[0], "fp32", TIMING_SEED + i, "cpu") for i in range(2)]
    calls = [TimedCall(lambda s=s: gate(*s), view=contract.selection) for s in sets]
    for c in calls:
        c()
    obs = Observation(observed=False, timed_outputs=[fingerprint_of(c.last) for c in calls])
    assert judge_outputs(obs, report.timed_refs, report.tolerance) is None
    stale = Observation(observed=False, timed_outputs=[obs.timed_outputs[0], obs.timed_outputs[0]])
    rej = judge_outputs(stale, report.timed_refs, report.tolerance)
    assert rej is not None and rej.status == "rejected_timed_output"
