"""The per-step arithmetic on a small hand-built Kineto trace whose answer is known by construction.

Real traces are tested in test_readers.py / test_h100_capture.py; this one pins the definitions (step wall,
busy, idle, launch-bound gaps, graph replays, steps by launch time, ops/modules/ranges around a launch).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest


def test_step_budget_by_construction(built_trace: Path):
    r = read_workload(WorkloadReadRequest(path=str(built_trace)))
    s = r.step
    assert s.steps == 2
    assert s.per_step_wall_us == [100.0]  # step 0: 10 -> 110 (next step first kernel); the last has no end
    assert s.busy_us == 28.0 and s.kernel_us == 28.0 and s.launches == 3
    # every gap of step 0's window 10 -> 110 is its own: 30 -> 42 (the add's launch call began at 40, after
    # the GEMM ended: 10 host + 2 launch latency) and 50 -> 110 up to step 1's GEMM launched at 103 (the
    # host in cudaStreamSynchronize 50 -> 55, then 48 before the launch, then 7 launch latency)
    assert s.launch_bound_gap_us == 67.0 and s.idle_steps == 1
    causes = {c.cause: c.us_per_step for c in s.idle_causes}
    assert causes == {
        "launch_bound": 67.0,
        "synchronization": 5.0,
        "memory_copy": 0.0,
        "cpu_op": 0.0,
        "queued": 0.0,
        "unexplained": 0.0,
    }
    assert sum(causes.values()) == s.idle_us == 72.0
    sync = next(c for c in s.idle_causes if c.cause == "synchronization")
    assert sync.evidence == ["cudaStreamSynchronize from no ATen op: 5.0 µs/step in 1 gaps/step"]
    gap = s.top_gaps[0]
    assert (gap.step, gap.offset_us, gap.dur_us) == (0, 40.0, 60.0) and gap.next_op == "aten::linear"
    assert gap.causes == {"synchronization": 5.0, "launch_bound": 55.0}
    (stream,) = s.streams
    assert stream.stream == 7 and stream.launches == 6 and stream.delay_median_us == 4.5
    assert s.host_wait_us == 5.0
    assert s.launch_call_us == 2.0  # graph replays are not launch calls of one kernel


def test_kernels_carry_op_module_range_phase_and_graph(built_trace: Path):
    r = read_workload(WorkloadReadRequest(path=str(built_trace)))
    gemm, add, mul = r.kernels
    assert gemm.category == "gemm" and gemm.us_per_step == 20.0 and gemm.per_step_us == [20.0, 20.0]
    assert gemm.ops == ["aten::linear"] and gemm.modules == ["Block"] and gemm.ranges == ["decode"]
    assert gemm.phases == ["decode"] and gemm.block == [128, 1, 1]
    assert gemm.input_shapes == "[[8,1,1024],[3072,1024]]" and add.input_shapes is None
    assert add.category == "elementwise" and add.ops == ["aten::add"] and not add.graph_launched
    assert mul.graph_launched and mul.launches_per_step == 1.0
    assert gemm.hot and gemm.cumulative_share == pytest.approx(20 / 28)
    assert {(g.level, g.key) for g in r.groups} >= {
        ("category", "gemm"),
        ("op", "aten::linear"),
        ("phase", "decode"),
    }


def test_opportunities_rank_launch_gap_then_fusion_with_formulas(built_trace: Path):
    r = read_workload(WorkloadReadRequest(path=str(built_trace)))
    kinds = [o.kind for o in r.opportunities]
    assert kinds == ["launch_overhead", "fusion"]
    launch, fusion = r.opportunities
    assert launch.saving_us_per_step == 67.0 and "launch-bound idle 67.0" in launch.formula
    assert fusion.saving_us_per_step == 4.0  # add (4) + mul (4) back to back: chain 8 - longest 4
    assert "launches saved 1/step" in fusion.formula


def test_step_wall_median_leaves_out_the_last_steps_span(built_trace: Path):
    r = read_workload(WorkloadReadRequest(path=str(built_trace)))
    assert r.step.wall_us == 100.0 and r.step.idle_us == 72.0


class _StackSweep:
    """The reference the reader's `_Nest` must agree with: a stack of open intervals swept in time order
    (what readers.kineto did before it used parent links), the innermost open interval last."""

    def __init__(self, intervals: list[tuple[float, float, str]]) -> None:
        self.items = sorted(intervals, key=lambda i: (i[0], -i[1]))
        self.pos = 0
        self.stack: list[tuple[float, float, str]] = []

    def at(self, t: float) -> list[tuple[float, float, str]]:
        while self.pos < len(self.items) and self.items[self.pos][0] <= t:
            item = self.items[self.pos]
            while self.stack and self.stack[-1][1] < item[0]:
                self.stack.pop()
            self.stack.append(item)
            self.pos += 1
        while self.stack and self.stack[-1][1] < t:
            self.stack.pop()
        return [iv for iv in self.stack if iv[1] >= t]


def _nest_answers(intervals: list[tuple[float, float, str]], times: list[float]) -> list[list[str]]:
    from kernelpilot.workload.readers.kineto import _Nest

    nest = _Nest(intervals)
    out = []
    for t in times:
        k = nest.at(t)
        stack = nest.stack(k, t)
        assert (k < 0 and not stack) or stack[-1] is nest.items[k]  # `at` is the innermost of `stack`
        out.append([iv[2] for iv in stack])
    return out


def test_nest_finds_the_sibling_open_at_each_time():
    """1000 ranges that closed before the next one opened, inside one outer range."""
    intervals = [(i * 10.0, i * 10.0 + 5.0, f"r{i}") for i in range(1000)] + [(0.0, 1e9, "outer")]
    times = [i * 10.0 + x for i in range(1000) for x in (1.0, 7.0)]
    got = _nest_answers(intervals, times)
    assert got[::2] == [["outer", f"r{i}"] for i in range(1000)] and got[1::2] == [["outer"]] * 1000


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 30)), max_size=25),
    st.lists(st.integers(-5, 100), max_size=40),
)
def test_nest_agrees_with_a_stack_sweep_also_on_overlapping_intervals(
    spans: list[tuple[int, int]], times: list[int]
):
    """Intervals from several threads overlap without nesting; `_Nest` must read them as the sweep did."""
    intervals = [(float(s), float(s + d), f"i{n}") for n, (s, d) in enumerate(spans)]
    ts = sorted(float(t) for t in times)
    ref = _StackSweep(intervals)
    assert _nest_answers(intervals, ts) == [[iv[2] for iv in ref.at(t)] for t in ts]


def _sorted_greedy(spans: list[tuple[float, float]]) -> list[tuple[float, float, str]]:
    """The reference for outer ops: ops sorted by start, longest first, then trace order; each op that
    starts after the last one picked ended is an outer op."""
    order = sorted(range(len(spans)), key=lambda k: (spans[k][0], -spans[k][1], k))
    picked: list[tuple[float, float, str]] = []
    end = float("-inf")
    for k in order:
        if spans[k][0] > end:
            end = spans[k][1]
            picked.append((spans[k][0], end, f"op{k}"))
    return picked


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), max_size=30),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_outer_ops_found_in_one_pass_equal_the_sorted_greedy(
    raw: list[tuple[int, int]], in_start_order: bool, rnd: random.Random
):
    """The reader picks outer ops while it reads when ops come in start order (ties in any order, as
    threads interleave), else it sorts them; both must pick what the sorted greedy picks."""
    from kernelpilot.workload.readers.kineto import _Buckets
    from kernelpilot.workload.readers.kineto_events import Decoded, Event

    rnd.shuffle(raw)
    if in_start_order:
        raw.sort(key=lambda sd: sd[0])  # stable: equal starts stay shuffled
    spans = [(float(s), float(s + d)) for s, d in raw]
    events = [Event(ph="X", cat="cpu_op", name=f"op{k}", ts=s, dur=e - s) for k, (s, e) in enumerate(spans)]
    buckets = _Buckets(Decoded(events, Event, None, lambda v: v))
    assert buckets.in_order or not in_start_order
    assert buckets.top_ops() == _sorted_greedy(spans)
