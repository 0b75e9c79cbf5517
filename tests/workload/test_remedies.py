"""`workload run --try-remedies` without a GPU: the child's pure parts (output check, paired schedule) on
plain Python values and closures, the report read from the child's JSON (whole, or cut short by the time
limit), the real child process refusing on a machine without torch, and the wiring in `run_workload`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelpilot.workload import capture, core, remedies
from kernelpilot.workload.models import CaptureTarget, Opportunity, WorkloadRunRequest
from kernelpilot.workload.readers.kineto import read_kineto
from kernelpilot.workload.remedies_child import outputs_match, paired_timing, snapshot


def test_outputs_match_on_plain_values():
    assert outputs_match(None, [1, (2, 3)], [1, (2, 3)], exact=True) == (True, None, "==")
    assert outputs_match(None, {"a": 1}, {"a": 2}, exact=True)[0] is False
    assert outputs_match(None, [1, 2], [1], exact=False) == (False, None, "length")
    assert snapshot(None, [1, (2, {"x": 3})]) == [1, (2, {"x": 3})]


def test_paired_timing_reports_both_sides_with_intervals():
    calls = {"eager": 0, "remedy": 0, "sync": 0}

    def eager():
        calls["eager"] += 1
        return sum(range(2000))

    def remedy():
        calls["remedy"] += 1
        return sum(range(200))

    def sync():
        calls["sync"] += 1

    r = paired_timing(eager, remedy, sync, k=3, blocks=4)
    assert calls["eager"] == calls["remedy"] == 4 * 2 * 3  # ABBA: two samples a side per block, k steps each
    assert calls["sync"] == 4 * 4 * 2  # before and after each sample
    for side in ("eager", "remedy"):
        t = r[side]
        assert t["samples"] == 8 and t["ci_low_us"] <= t["median_us"] <= t["ci_high_us"]
    assert r["ratio_ci_low"] <= r["ratio"] <= r["ratio_ci_high"]
    assert r["saving_us_per_step"] == pytest.approx(r["eager"]["median_us"] - r["remedy"]["median_us"])


def _timing(med: float) -> dict:
    return {"median_us": med, "ci_low_us": med - 1, "ci_high_us": med + 1, "samples": 32}


def test_parse_keeps_what_a_killed_child_measured():
    doc = {
        "gpu": "NVIDIA H100 80GB HBM3",
        "torch": "2.11.0",
        "steps_per_sample": 9,
        "eager_probe_us": 2700.0,
        "remedies": [
            {
                "name": "cuda_graph",
                "status": "measured",
                "notes": [],
                "outputs_equal": True,
                "max_abs_diff": 0.0,
                "tolerance": "bitwise",
                "eager": _timing(2700.0),
                "remedy": _timing(400.0),
                "ratio": 0.148,
                "ratio_ci_low": 0.147,
                "ratio_ci_high": 0.15,
                "saving_us_per_step": 2300.0,
            }
        ],
    }
    rep = remedies.parse(doc, 2343.2, 80.0, "the remedies child stopped: python3 did not finish within 75 s")
    graph, comp = rep.remedies
    assert graph.status == "measured" and graph.saving_us_per_step == 2300.0 and graph.remedy
    assert graph.remedy.median_us == 400.0 and rep.estimate_us_per_step == 2343.2
    assert comp.name == "torch_compile_reduce_overhead" and comp.status == "not_run"
    assert comp.why is not None and "did not finish within 75 s" in comp.why
    from kernelpilot.workload.models import remedy_lines

    text = "\n".join(remedy_lines(rep))
    assert "cuda_graph: eager 2700.0 µs [2699.0, 2701.0] -> 400.0 µs [399.0, 401.0], saving 2300.0" in text
    assert "estimate 2343.2 µs/step" in text and "torch_compile_reduce_overhead: not run" in text


def test_the_child_without_a_gpu_says_so(tmp_path: Path):
    """The real child process on this machine with no GPU (no torch, or CI's CPU torch): both remedies not
    run, and why."""
    if importlib.util.find_spec("torch") is None:
        why = "torch is not installed"
    else:
        import torch

        # Justified skip that cannot happen in CI (no GPU there): on a GPU machine the child runs the step.
        if torch.cuda.is_available():
            pytest.skip("this machine has a GPU: the child would run the step")
        why = "torch sees no GPU"
    (tmp_path / "step.py").write_text("def make():\n    return lambda: None\n")
    rep = remedies.run_remedies(CaptureTarget(spec="step.py:make", workdir=str(tmp_path)), 100.0, 60.0)
    assert [r.status for r in rep.remedies] == ["not_run", "not_run"]
    assert any("no GPU" in n and why in n for n in rep.notes), rep.notes


def _opp(kind: str) -> Opportunity:
    return Opportunity(kind=kind, title=f"{kind} x", saving_us_per_step=1.0, share_of_step=None, formula="f",
                       next_command="n")  # fmt: skip


def test_why_not():
    from types import SimpleNamespace

    lead_headroom = SimpleNamespace(opportunities=[_opp("headroom"), _opp("launch_overhead")])
    assert "closure" in (remedies.why_not(lead_headroom, None) or "")  # type: ignore[arg-type]
    assert "top opportunity is headroom" in (remedies.why_not(lead_headroom, "a.py:f") or "")  # type: ignore[arg-type]
    lead_launch = SimpleNamespace(opportunities=[_opp("launch_overhead")])
    assert remedies.why_not(lead_launch, "a.py:f") is None  # type: ignore[arg-type]
    assert "no opportunity" in (remedies.why_not(SimpleNamespace(opportunities=[]), "a.py:f") or "")  # type: ignore[arg-type]


def test_run_workload_tries_the_remedies_when_launch_overhead_leads(
    monkeypatch: pytest.MonkeyPatch, built_trace: Path
):
    def fake_capture(target, steps, outdir, timeout_s):
        meta = {"gpu": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "event_step_median_us": 71.5}
        return capture.Captured(read_kineto(built_trace), built_trace, meta)

    seen = {}

    def fake_run(target, estimate, timeout_s):
        seen["args"] = (target.spec, estimate, timeout_s)
        return remedies.parse({}, estimate, 1.0, "stub")

    monkeypatch.setattr(capture, "capture_closure", fake_capture)
    monkeypatch.setattr(remedies, "run_remedies", fake_run)
    res = core.run_workload(WorkloadRunRequest(spec="step.py:make", drill=False, try_remedies=True))
    assert res.opportunities[0].kind == "launch_overhead"
    assert seen["args"] == ("step.py:make", res.opportunities[0].saving_us_per_step, 60.0)
    assert res.remedies is not None and "remedies measured" in res.render_text()
    off = core.run_workload(WorkloadRunRequest(spec="step.py:make", drill=False))
    assert off.remedies is None
