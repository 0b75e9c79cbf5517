"""Idle time by cause on the recorded H100 traces, checked against a computation from the raw events.

The reference below reads the Chrome-trace JSON with the json module alone (no kernelpilot reader) and
applies the rule of workload/idle.py in another way: the host part of each gap minus the measure of the
union of synchronising/copy calls and ops that launch nothing, where the module cuts the gap into pieces.
"""

from __future__ import annotations

import bisect
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest

WL = Path(__file__).resolve().parent.parent / "fixtures" / "workload"
TRACES = ["h100_decode_trace.json", "h100_train_trace.json", "h100_decode_graph_trace.json"]
_STEP = re.compile(r"^kernelpilot\.step#(\d+)$")
_SYNC = re.compile(r"Synchronize|^(?:cuda|hip)Memcpy(?!Async)|^cuMemcpy(?!Async)")
_COPY = re.compile(r"^(?:cuda|hip)Memcpy|^cuMemcpy|^(?:cuda|hip)Memset|^cuMemset")


def _union_in(intervals: list[tuple[float, float]], x: float, y: float) -> float:
    """Measure of the union of `intervals` within [x, y)."""
    clipped = sorted((max(s, x), min(e, y)) for s, e in intervals if min(e, y) > max(s, x))
    total, end = 0.0, x
    for s, e in clipped:
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def _raw_launch_bound(path: Path) -> tuple[list[float], list[float]]:
    """(launch-bound µs, idle µs) of each counted step, from the raw events."""
    ev = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    device = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    runtime = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    steps = sorted(
        (int(m.group(1)), e["ts"], e["ts"] + e["dur"])
        for e in ev
        if e.get("cat") == "user_annotation" and (m := _STEP.match(e["name"]))
    )
    launch_of: dict[int, Any] = {}
    for i, d in enumerate(device):
        launch_of[i] = runtime.get(d["args"].get("correlation"))
    first: dict[int, float] = {}
    for i, d in enumerate(device):
        rt = launch_of[i]
        k = next((n for n, (_, s, e) in enumerate(steps) if rt is not None and s <= rt["ts"] <= e), None)
        if k is not None:
            first[k] = min(first.get(k, float("inf")), d["ts"])
    firsts = [first[k] for k in sorted(first)]
    launches = sorted(launch_of[i]["ts"] for i in range(len(device)) if launch_of[i] is not None)
    ops = sorted((e["ts"], -(e["ts"] + e["dur"])) for e in ev if e.get("cat") == "cpu_op")
    outer, end = [], float("-inf")
    for s, neg in ops:
        if s > end:
            end = -neg
            outer.append((s, end))
    excluded = [
        (s, e)
        for s, e in outer
        if not (i := bisect.bisect_left(launches, s)) < len(launches) or launches[i] > e
    ]
    excluded += [
        (e["ts"], e["ts"] + e["dur"])
        for e in ev
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and (_SYNC.search(e["name"]) or _COPY.search(e["name"]))
    ]
    bound = [0.0] * len(firsts)
    idle = [0.0] * len(firsts)
    order = sorted(range(len(device)), key=lambda i: device[i]["ts"])
    end = float("-inf")
    for i in order:
        d, rt = device[i], launch_of[i]
        s = d["ts"]
        if s > end > float("-inf"):
            w = bisect.bisect_right(firsts, end) - 1
            idle[w] += s - end
            graph = rt is not None and "GraphLaunch" in rt["name"]
            if rt is not None and rt["ts"] >= end:
                m = min(rt["ts"], s)
                bound[w] += (m - end) - _union_in(excluded, end, m) + (s - m)
            elif rt is not None and not graph and rt["ts"] + rt["dur"] > end:
                bound[w] += s - end
        end = max(end, s + d["dur"])
    counted = len(firsts) - 1 if len(firsts) > 1 else 1
    return bound[:counted], idle[:counted]


@pytest.mark.parametrize("name", TRACES)
def test_launch_bound_equals_the_raw_event_computation(name: str):
    r = read_workload(WorkloadReadRequest(path=str(WL / name)))
    bound, idle = _raw_launch_bound(WL / name)
    s = r.step
    assert s.idle_steps == len(bound)
    assert s.launch_bound_gap_us == pytest.approx(statistics.median(bound), rel=0.005, abs=1e-6)
    assert s.per_step_idle_us == pytest.approx(idle, rel=1e-9)
    lb = next(c for c in s.idle_causes if c.cause == "launch_bound")
    assert lb.per_step_us == pytest.approx(bound, rel=0.005, abs=1e-6)


@pytest.mark.parametrize("name", TRACES)
def test_every_idle_microsecond_has_a_cause(name: str):
    s = read_workload(WorkloadReadRequest(path=str(WL / name))).step
    mean_idle = sum(s.per_step_idle_us) / len(s.per_step_idle_us)
    assert sum(c.us_per_step for c in s.idle_causes) == pytest.approx(mean_idle, rel=1e-9)
    for k in range(len(s.per_step_idle_us)):  # per step too
        assert sum(c.per_step_us[k] for c in s.idle_causes) == pytest.approx(s.per_step_idle_us[k], rel=1e-9)
    unexplained = next(c for c in s.idle_causes if c.cause == "unexplained")
    assert unexplained.share_of_idle <= 0.05
    assert s.top_gaps and all(sum(g.causes.values()) == pytest.approx(g.dur_us) for g in s.top_gaps)


def test_the_gap_to_the_next_step_belongs_to_the_step():
    """Issue 36: the host-bound gap between one step's last kernel and the next step's first was left out,
    and the last step, which has no such gap, was in the median."""
    s = read_workload(WorkloadReadRequest(path=str(WL / "h100_decode_trace.json"))).step
    assert s.idle_steps == 2 and len(s.per_step_wall_us) == 2
    for w, b, i in zip(s.per_step_wall_us, s.per_step_busy_us, s.per_step_idle_us, strict=True):
        assert w == pytest.approx(b + i)
    lb = next(c for c in s.idle_causes if c.cause == "launch_bound")
    assert lb.share_of_idle > 0.9  # eager decode under the tracer: the host holds the GPU idle
    assert s.streams[0].stream == 7 and s.streams[0].launches == 405
    assert s.streams[0].delay_median_us is not None and 5.0 < s.streams[0].delay_median_us < 15.0


def test_graph_replay_idle_is_queued_device_latency():
    s = read_workload(WorkloadReadRequest(path=str(WL / "h100_decode_graph_trace.json"))).step
    causes = {c.cause: c for c in s.idle_causes}
    assert s.launch_bound_gap_us == 0.0 and causes["queued"].share_of_idle == 1.0
    assert causes["queued"].evidence[0].startswith("graph replay: kernel-to-kernel latency")
    assert s.streams[0].delay_median_us is None and s.streams[0].queue_depth_max >= 134


def test_training_copies_name_direction_bytes_and_op():
    s = read_workload(WorkloadReadRequest(path=str(WL / "h100_train_trace.json"))).step
    causes = {c.cause: c for c in s.idle_causes}
    copy = causes["memory_copy"]
    assert copy.us_per_step > 0 and "Memcpy DtoD (Device -> Device), 4,194,304 B" in copy.evidence[0]
    assert "from autograd::engine::evaluate_function" in copy.evidence[0]
    assert causes["cpu_op"].us_per_step > 0 and causes["cpu_op"].evidence


def test_html_report_has_the_idle_causes():
    from kernelpilot.workload.views import render_html

    r = read_workload(WorkloadReadRequest(path=str(WL / "h100_train_trace.json")))
    html = render_html(r)
    table = html[html.index('<table id="idle">') : html.index("</table>", html.index('<table id="idle">'))]
    assert "<td>launch-bound</td>" in table and "Memcpy DtoD (Device -&gt; Device), 4,194,304 B" in table
    assert 'id="remedies"' not in html  # no remedies were tried on a read trace
