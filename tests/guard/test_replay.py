"""The GPU half of the hack suite, replayed: activity traces and timed figures recorded on an H100
(tests/fixtures/guard, PROVENANCE.md) through the same `observe` and `physics` code that judged them live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.guard import observe
from kernelpilot.guard.models import Contract, Observation, Rejection, RooflineSpec
from kernelpilot.guard.physics import check

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "guard"
GEMM_4096 = Contract(
    module="contract_gemm.py",
    candidate="kernel_bf16.py:gemm",
    shapes=[{"m": 4096, "n": 4096, "k": 4096}, {"m": 1000, "n": 777, "k": 1100}],
    dtype="bf16",
    reduction="k",
    roofline=RooflineSpec(op="gemm", params={"m": "m", "n": "n", "k": "k"}),
)


def _judged(name: str, mode: str) -> tuple[Observation, Rejection | None, dict[str, Any]]:
    doc: dict[str, Any] = json.loads((FIXTURES / f"trace_{name}.json").read_text())
    obs = observe.observation_from_trace(doc["trace"], doc["calls"])
    obs.synced_us_per_call = doc["synced_us"]
    return obs, observe.judge(obs, doc[f"timed_{mode}_us"]), doc


def test_side_stream_work_escapes_the_cold_events_and_the_trace_catches_it() -> None:
    obs, rej, doc = _judged("side_stream", "cold")
    assert doc["timed_cold_us"] < 2.0 and obs.device_busy_us_per_call > 150.0  # the 4096^3 GEMM
    assert rej is not None and rej.status == "rejected_side_stream"
    assert rej.numbers["unaccounted_us"] > 150.0
    assert f"re-timed with a device-wide synchronize: {doc['synced_us']:.2f} us" in rej.evidence


def test_a_captured_graph_times_the_side_stream_too() -> None:
    # warm timing replays a captured graph: the side stream joined the capture, so the figure covers it
    obs, rej, doc = _judged("side_stream", "warm")
    assert rej is None and doc["timed_warm_us"] > obs.device_busy_us_per_call


def test_work_a_thread_launches_escapes_the_events_too() -> None:
    obs, rej, doc = _judged("thread_gemm", "cold")
    assert rej is not None and rej.status == "rejected_side_stream"
    assert doc["timed_cold_us"] < 2.0 < 150.0 < obs.device_busy_us_per_call


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_the_library_call_is_accepted(mode: str) -> None:
    obs, rej, doc = _judged("honest_gemm", mode)
    assert rej is None and len(obs.streams) == 1
    assert abs(obs.device_busy_us_per_call - doc[f"timed_{mode}_us"]) / doc[f"timed_{mode}_us"] < 0.05


def test_a_candidate_hiding_from_timer_and_tracer_is_caught_by_physics() -> None:
    obs, rej, doc = _judged("stack_aware", "cold")
    assert obs.device_busy_us_per_call == 0.0 and rej is None  # nothing to see: the trace alone is fooled
    got = check(GEMM_4096, doc["timed_cold_us"], doc["device"])
    assert got.rejection is not None and got.rejection.status == "rejected_impossible"
    assert (
        "bf16_dense_tflops: 989.4 TFLOP/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L" in got.rejection.evidence
    )
    honest = json.loads((FIXTURES / "trace_honest_gemm.json").read_text())
    fine = check(GEMM_4096, honest["timed_cold_us"], honest["device"])
    assert fine.rejection is None and fine.flagged  # 170.7 us: above the floor, within 95 % of the roof


@pytest.mark.parametrize(
    ("name", "trace_needed"),
    [("honest_gemm", False), ("side_stream", True), ("thread_gemm", True), ("stack_aware", True)],
)
def test_the_synchronized_calls_bound_the_trace_and_settle_the_honest_call(
    name: str, trace_needed: bool
) -> None:
    """observe() re-times the calls between device-wide synchronizes first and skips the trace when that
    bound is already within judge's allowance: on the H100 recordings the bound holds (busy <= synced),
    the library call needs no trace (202.0 us synced vs 215.4 us allowed over 170.7 us cold) and every hack
    does."""
    obs, _, doc = _judged(name, "cold")
    assert obs.device_busy_us_per_call <= doc["synced_us"]
    assert (doc["synced_us"] > observe.allowed_us(doc["timed_cold_us"])) is trace_needed


def test_observe_skips_the_trace_only_when_the_synchronized_calls_settle_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.timing.fake_torch import FakeTorch, Sim

    from kernelpilot.timing import kernels

    doc: dict[str, Any] = json.loads((FIXTURES / "trace_side_stream.json").read_text())
    traces: list[int] = []

    def fake_traced(torch: Any, work: Any, cpu: bool = True) -> dict[str, Any]:
        traces.append(1)
        work()
        return dict(doc["trace"])

    monkeypatch.setattr(kernels, "traced", fake_traced)
    busy_host = lambda: sum(range(20_000))  # noqa: E731 - host work: the synchronized calls take real time
    t = FakeTorch(Sim())
    fine = observe.observe(t, [busy_host], 5, timed_us=1e6)  # a figure far above what the calls take
    assert fine.busy_from == "synchronize" and not traces and fine.synced_us_per_call is not None
    assert fine.device_busy_us_per_call == fine.synced_us_per_call and observe.judge(fine, 1e6) is None
    hidden = observe.observe(t, [busy_host], 5, timed_us=0.0)  # the cold figure of work that escaped
    assert hidden.busy_from == "trace" and traces == [1] and hidden.device_busy_us_per_call > 150.0
    rej = observe.judge(hidden, 0.0)
    assert rej is not None and rej.status == "rejected_side_stream"
    assert observe.observe(t, [busy_host], 5).busy_from == "trace"  # no figure given: always traced


# ---- issue 31: threads judged by what they launch, on traces recorded with the launching thread ----
# Recorded by `python tests/guard/record_trace.py --all OUT` on the device (tests/fixtures/guard/
# PROVENANCE.md); a missing record fails.

THREAD_CASES = ["honest_gemm", "compile_rmsnorm", "library_idle_gemm", "pool_launch_gemm", "add_cost"]


def _thread_doc(name: str) -> dict[str, Any]:
    path = FIXTURES / f"threads_{name}.json"
    assert path.is_file(), f"{path.name} not recorded (tests/guard/record_trace.py --all on a GPU)"
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


@pytest.mark.parametrize("name", THREAD_CASES)
def test_a_recorded_trace_attributes_its_kernels_as_the_live_guard_did(name: str) -> None:
    """The recorded trace through `attribute_launches` (the timing thread by its OS id or the annotation
    around the calls) gives what the live observation reported, and the judgement is the recorded one."""
    doc = _thread_doc(name)
    live = Observation.model_validate(doc["observation"])
    assert (doc["trace"] is not None and live.busy_from == "trace") or not live.threads
    if doc["trace"] is not None:
        tids = {doc["timing_native_id"], *observe._annotation_tids(doc["trace"])}
        ok, tid, foreign = observe.attribute_launches(doc["trace"], tids, observe.thread_names(live.threads))
        assert (ok, tid, foreign) == (live.attributed, live.timing_tid, live.foreign_launches)
        assert ok, "the recorded trace names the launching thread of its device work"
    replayed = observe.judge(live, doc["timed_cold_us"])
    got = replayed.status if replayed is not None else "accepted"
    assert got == doc["expect"], replayed.evidence if replayed is not None else ""


def test_torch_compile_and_an_idle_library_thread_pass_and_a_pool_that_launches_is_named() -> None:
    compiled = Observation.model_validate(_thread_doc("compile_rmsnorm")["observation"])
    assert compiled.foreign_launches == [] and compiled.threads_started == []
    idle = Observation.model_validate(_thread_doc("library_idle_gemm")["observation"])
    assert [t.origin for t in idle.threads if t.name == "idle-library-wait"] == ["library"]
    pool = _thread_doc("pool_launch_gemm")
    rej = observe.judge(Observation.model_validate(pool["observation"]), pool["timed_cold_us"])
    assert rej is not None and rej.status == "rejected_thread"
    assert "launched" in rej.evidence and "from the calling thread" in rej.evidence
    # The recording (before ThreadSeen.ident) could not name the pool thread: CUPTI named it by the low 32
    # bits of its pthread id, the watch had only its OS id. The join now keys both; on the real trace:
    live = Observation.model_validate(pool["observation"])
    (foreign_tid,) = {f.tid for f in live.foreign_launches}
    pool_thread = next(t for t in live.threads if t.name.startswith("gemm-pool"))
    pool_thread.ident = (0x7F00 << 32) | foreign_tid  # a pthread id whose low 32 bits are the trace's tid
    tids = {pool["timing_native_id"], *observe._annotation_tids(pool["trace"])}
    _, _, foreign = observe.attribute_launches(pool["trace"], tids, observe.thread_names(live.threads))
    assert {f.thread for f in foreign} == {pool_thread.name}
    named = observe.judge(live.model_copy(update={"foreign_launches": foreign}), pool["timed_cold_us"])
    assert named is not None and pool_thread.name in named.evidence


def test_a_started_thread_always_gets_the_trace_and_its_launches_are_attributed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The synchronized re-timing cannot say who launched what: with a thread started while watched the
    trace is taken even when the re-timing settles the time, with CPU activity (the launch records)."""
    import threading
    import time

    from tests.timing.fake_torch import FakeTorch, Sim

    from kernelpilot.timing import kernels

    asked: list[bool] = []
    me = threading.get_native_id()
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": me, "ts": 0, "dur": 1,
             "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "spin", "ts": 2, "dur": 1,
             "args": {"correlation": 1, "stream": 7}},
            {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "tid": me + 1, "ts": 0, "dur": 1,
             "args": {"correlation": 2}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 4, "dur": 9,
             "args": {"correlation": 2, "stream": 7}},
        ]
    }  # fmt: skip

    def fake_traced(torch: Any, work: Any, cpu: bool = True) -> dict[str, Any]:
        asked.append(cpu)
        work()
        return trace

    monkeypatch.setattr(kernels, "traced", fake_traced)
    w = observe.Watch(import_torch=False)
    try:
        idle = threading.Thread(target=time.sleep, args=(0,), name="idle")
        idle.start()
        idle.join()
        obs = observe.observe(FakeTorch(Sim()), [lambda: None], 5, timed_us=1e6, watch=w)
    finally:
        w.findings()
    assert asked == [True] and obs.busy_from == "trace" and obs.attributed and obs.timing_tid == me
    assert [(f.kernel, f.launches) for f in obs.foreign_launches] == [("gemm", 1)]
    rej = observe.judge(obs, 1e6)
    assert (
        rej is not None and rej.status == "rejected_thread" and "launched gemm x1 on stream 7" in rej.evidence
    )
