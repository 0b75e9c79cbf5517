"""Observation of the timed closure from outside its code: replaced timers and started threads (CPU, real),
and the judgement of traced device work against the timed figure."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.guard import observe
from kernelpilot.guard.models import KernelSeen, Observation
from kernelpilot.timing.callables import time_callable

CASES = Path(__file__).parent / "cases"


def test_watch_names_a_replaced_timer_and_a_thread_even_after_it_ended() -> None:
    w = observe.Watch(import_torch=False)
    real = time.perf_counter
    try:
        time.perf_counter = lambda: 0.0
        t = threading.Thread(target=lambda: None, name="quick")
        t.start()
        t.join()  # already gone when the findings are read
        assert w.replaced() == ["time.perf_counter"]
        found = w.findings()
    finally:
        time.perf_counter = real
    assert found[0] == "replaced: time.perf_counter"
    assert found[1].startswith("thread started: quick (runs ")


def test_watch_sees_nothing_when_nothing_happens_and_restores_the_hook() -> None:
    before = threading.getprofile()
    w = observe.Watch(import_torch=False)
    sum(range(1000))
    assert w.findings() == []
    assert threading.getprofile() is before


def test_watch_reports_its_own_hook_removed() -> None:
    w = observe.Watch(import_torch=False)
    threading.setprofile(None)
    assert "threading.setprofile (the thread-start watch was removed)" in w.replaced()


def test_watch_sees_kernelpilots_own_timing_functions_replaced() -> None:
    from kernelpilot.timing import stats

    w = observe.Watch(import_torch=False)
    real = stats.summarize
    try:
        stats.summarize = lambda *a, **k: None  # type: ignore[assignment]
        assert "kernelpilot.timing.stats.summarize" in w.replaced()
    finally:
        stats.summarize = real
        w.findings()


@pytest.mark.parametrize(
    ("candidate", "status", "what"),
    [
        ("timer_axpy.py", "rejected_timer_replaced", "time.perf_counter_ns"),
        ("thread_axpy.py", "rejected_thread", "axpy-worker"),
    ],
)
def test_time_observe_stops_before_timing_a_hack_seen_at_load(
    tmp_path: Path, candidate: str, status: str, what: str
) -> None:
    from kernelpilot.guard.errors import GuardFindingsError
    from kernelpilot.guard.steps import findings_rejection

    factory = tmp_path / "fac.py"
    factory.write_text(
        f"import importlib.util, numpy as np\n"
        f"spec = importlib.util.spec_from_file_location('cand', {str(CASES / candidate)!r})\n"
        "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\n"
        "def make():\n    x, y = np.ones(64, np.float32), np.ones(64, np.float32)\n"
        "    return lambda: mod.axpy(x, y)\n"
    )
    real = time.perf_counter_ns
    try:
        with pytest.raises(GuardFindingsError, match="nothing was timed") as caught:
            time_callable(
                "fac.py:make",
                cwd=tmp_path,
                observe=True,
                runs=3,
                warmup=1,
                rotate=1,
                modes=["warm"],
                device="cpu",
            )
    finally:
        time.perf_counter_ns = real
    rej = findings_rejection(caught.value.message)
    assert rej is not None and rej.status == status and what in rej.evidence


def test_time_observe_through_the_cli_reports_the_rejection(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "fac.py").write_text(
        "import threading\ndef make():\n    def run():\n"
        "        threading.Thread(target=lambda: None, name='bg').start()\n    return run\n"
    )
    (tmp_path / "ok.py").write_text("def make():\n    return lambda: sum(range(100))\n")
    args = ["--json", "time", "--workdir", str(tmp_path), "--observe", "--runs", "3", "--device", "cpu"]
    doc = json.loads(run_cli(*args, "fac.py:make").out)  # the thread starts in the timed calls
    assert doc["observation"]["observed"] is False
    assert doc["rejection"]["status"] == "rejected_thread" and "bg (runs " in doc["rejection"]["evidence"]
    ok = json.loads(run_cli(*args, "ok.py:make").out)
    assert ok["rejection"] is None and ok["observation"]["watch_findings"] == []
    plain = json.loads(run_cli("--json", "time", "ok.py:make", "--workdir", str(tmp_path), "--runs", "3").out)
    assert plain["observation"] is None


def _obs(busy: float, **kw: Any) -> Observation:
    return Observation(
        observed=True, calls=10, device_busy_us_per_call=busy, kernel_sum_us_per_call=busy, streams=[7, 13],
        kernels=[KernelSeen(name="gemm", stream=13, duration_us=busy)], synced_us_per_call=busy + 5, **kw,
    )  # fmt: skip


def test_judge_accounts_for_device_work_within_its_margin() -> None:
    assert observe.judge(_obs(173.5), 177.7) is None  # timed more than the trace saw: fine
    assert observe.judge(_obs(10.0), 7.0) is None  # 10 <= 7 * 1.25 + 2
    rej = observe.judge(_obs(173.5), 0.03)
    assert rej is not None and rej.status == "rejected_side_stream"
    assert rej.numbers["unaccounted_us"] == pytest.approx(173.47)
    assert "re-timed with a device-wide synchronize: 178.50 us" in rej.evidence
    assert observe.judge(Observation(observed=False, why_unobserved="cpu"), 0.0) is None


def test_union_of_device_intervals_counts_overlap_once() -> None:
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "a", "ts": 0.0, "dur": 10.0, "args": {"stream": 7}},
            {"ph": "X", "cat": "kernel", "name": "b", "ts": 5.0, "dur": 10.0, "args": {"stream": 13}},
            {"ph": "X", "cat": "gpu_memcpy", "name": "c", "ts": 30.0, "dur": 2.0, "args": {"stream": 7}},
            {"ph": "X", "cat": "cpu_op", "name": "host", "ts": 0.0, "dur": 100.0},
        ]
    }
    obs = observe.observation_from_trace(trace, calls=2)
    assert obs.device_busy_us_per_call == pytest.approx(17.0 / 2)
    assert obs.kernel_sum_us_per_call == pytest.approx(22.0 / 2)
    assert obs.streams == [7, 13] and obs.kernels[0].stream in (7, 13)


def test_a_timing_that_fails_after_a_finding_is_rejected_with_it(run_cli: Any, tmp_path: Path) -> None:
    from kernelpilot.guard.errors import GuardFindingsError
    from kernelpilot.guard.steps import findings_rejection

    (tmp_path / "fac.py").write_text(
        "import time\ntime.perf_counter_ns = lambda: 0\n"
        "def make():\n    def run():\n        raise RuntimeError('boom')\n    return run\n"
    )
    real = time.perf_counter_ns
    try:
        with pytest.raises(GuardFindingsError, match=r"replaced: time\.perf_counter_ns"):
            time_callable(
                "fac.py:make",
                cwd=tmp_path,
                observe=True,
                runs=2,
                warmup=0,
                rotate=1,
                modes=["warm"],
                device="cpu",
            )
        (tmp_path / "fac2.py").write_text((tmp_path / "fac.py").read_text())
        out = run_cli(
            "--json", "time", "fac2.py:make", "--workdir", str(tmp_path), "--observe", "--device", "cpu"
        )
    finally:
        time.perf_counter_ns = real
    assert out.code != 0 and '"guard_findings"' in out.err
    rej = findings_rejection(out.err)
    assert (
        rej is not None and rej.status == "rejected_timer_replaced" and "time.perf_counter_ns" in rej.evidence
    )
    assert findings_rejection("kernelpilot: error: something else") is None


def test_timed_outputs_are_held_against_the_reference() -> None:
    from kernelpilot.guard.models import Tolerance

    ref = [4.0, 1.0, -2.0, 3.0, 0.5]
    tol = Tolerance(rtol=1e-3)
    same = Observation(observed=False, timed_outputs=[[4.0, 1.0005, -2.0, 3.0, 0.5]])
    assert observe.judge_outputs(same, [ref], tol) is None
    off = Observation(observed=False, timed_outputs=[[4.0, 1.0, -2.0, 3.5, 0.5]])
    rej = observe.judge_outputs(off, [ref], tol)
    assert rej is not None and rej.status == "rejected_timed_output"
    assert "1 of 4 sampled values out of tolerance (e.g. 3.5 vs reference 3.0)" in rej.evidence
    none = Observation(observed=False, timed_outputs=[None])
    assert "returned no array/tensor" in observe.judge_outputs(none, [ref], tol).evidence  # type: ignore[union-attr]
    short = Observation(observed=False, timed_outputs=[[3.0, 1.0, 1.0, 1.0]])
    assert "3 elements where the reference has 4" in observe.judge_outputs(short, [ref], tol).evidence  # type: ignore[union-attr]
    assert observe.judge_outputs(Observation(observed=False), [ref], tol) is None  # nothing sampled
    # a non-finite timed value comes through JSON as None (the timing process's fingerprint_of) and is wrong
    inf = Observation.model_validate_json(
        Observation(observed=False, timed_outputs=[[4.0, 1.0, None, 3.0, 0.5]]).model_dump_json()
    )
    rej = observe.judge_outputs(inf, [ref], tol)
    assert (
        rej is not None
        and "1 of 4 sampled values out of tolerance (e.g. a non-finite value vs reference -2.0)"
        in rej.evidence
    )


def test_a_timing_process_stopped_by_a_broken_event_timer_is_a_replaced_timer() -> None:
    """What eval reads from a failed paired timing process (tasks.paired._cli_error's 'Type: message')."""
    from kernelpilot.guard.steps import findings_rejection

    tail = (
        "TimerMismatchError: the CUDA event timer read 0.001 us for a 2000000-cycle spin the host clock saw "
        "take 1010.3 us (at most 0.0% of it, at least 25% expected): the event timer is not measuring "
        "(fix: time with unmodified torch.cuda timing functions)"
    )
    rej = findings_rejection(tail)
    assert rej is not None and rej.status == "rejected_timer_replaced" and rej.check == "observation"
    assert "read 0.001 us for a 2000000-cycle spin" in rej.evidence and "fix:" not in rej.evidence
    seen = findings_rejection("GuardFindingsError: the guard's findings: thread started: w (runs m.f) (x)")
    assert seen is not None and seen.status == "rejected_thread" and "thread started: w" in seen.evidence
    assert findings_rejection("ToolFailedError: python3 exited with code 1") is None


def test_a_non_finite_timed_output_is_reported_as_none() -> None:
    import numpy as np

    from kernelpilot.guard.backend import fingerprint_of

    got = fingerprint_of(np.array([1.0, np.inf, np.nan, -2.0], dtype=np.float32))
    assert got is not None and got[0] == 4.0 and got[1:] == [1.0, None, None, -2.0]


def test_a_cached_answer_under_the_timer_is_named_by_its_outputs_before_its_escaped_work() -> None:
    """H100 suite, `timeraware_gemm`: under kernelpilot's timer it returns its first answer (timed at 0 us or
    less) but computes honestly while observed, so the trace's GEMM also 'escaped' the timer. The guard's
    order (`judged`: watch, timed outputs, escape) names the hack, not the symptom; an honest side-stream
    escape with right outputs is still `rejected_side_stream`, and a replaced timer still comes first."""
    from kernelpilot.guard.models import Tolerance

    ref, tol = [4.0, 1.0, -2.0, 3.0, 0.5], Tolerance(rtol=1e-3)
    cached = _obs(173.5, timed_outputs=[[4.0, 9.0, 9.0, 9.0, 9.0]])
    assert observe.judged(cached, -0.02, [ref], tol).status == "rejected_timed_output"  # type: ignore[union-attr]
    right = _obs(173.5, timed_outputs=[ref[:]])
    assert observe.judged(right, 0.03, [ref], tol).status == "rejected_side_stream"  # type: ignore[union-attr]
    patched = _obs(
        173.5, timed_outputs=[[4.0, 9.0, 9.0, 9.0, 9.0]], replaced=["torch.cuda.Event.elapsed_time"]
    )
    assert observe.judged(patched, 0.03, [ref], tol).status == "rejected_timer_replaced"  # type: ignore[union-attr]
    assert (
        observe.judged(right, 180.0, [ref], tol) is None and observe.judged(right, 180.0, None, None) is None
    )
