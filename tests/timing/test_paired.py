"""Paired A/B timing (timing/paired.py, timing/compare.py): ABBA blocks on the simulated stream
(tests/timing/fake_torch.py), typed errors before and during timing, the CPU fallback through the CLI, and
the two sides' modules kept apart. The same engine ran on an H100 (bench/paired_bench.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.timing.fake_torch import FakeTorch, Sim

from kernelpilot.timing import paired
from kernelpilot.timing.compare import compare_sides, time_compare
from kernelpilot.timing.errors import NotComparableError, SideFailedError
from kernelpilot.timing.models import CompareRequest
from kernelpilot.timing.stats import paired_ratio_ci, ratio_verdict


def _compare(sim: Sim, a_us: float, b_us: float, **kw: Any) -> Any:
    t = FakeTorch(sim)
    a = paired.Side("baseline", [t.kernel(a_us)])
    b = paired.Side("candidate", [t.kernel(b_us)])
    kw.setdefault("warmup_min_ms", 0.0)  # the simulated GPU needs no clock ramp
    req = CompareRequest(a="base.py:make", b="cand.py:make", max_wall_s=30, **kw)
    return compare_sides(a, b, req, t)


def test_a_three_percent_slower_candidate_is_regressed_and_the_reverse_improved() -> None:
    jitter = lambda i: (i % 7) * 0.3  # noqa: E731 - deterministic per-launch jitter of 0-1.8 us
    slow = _compare(Sim(jitter=jitter), 100.0, 103.0)
    assert slow.verdict == "regressed" and slow.method == "paired" and slow.order == "ABBA/BAAB"
    assert slow.ratio_median == pytest.approx(1.03, abs=0.005)
    lo, hi = slow.ratio_ci
    assert 1.0 < lo <= slow.ratio_median <= hi and slow.pairs >= 16
    assert slow.timer == "held_stream_events" and slow.gap_free
    assert slow.a_stats.median == pytest.approx(100.0, abs=2.0) and slow.b_stats.median == pytest.approx(
        103.0, abs=2.0
    )
    fast = _compare(Sim(jitter=jitter), 103.0, 100.0)
    assert fast.verdict == "improved" and fast.ratio_ci[1] < 1.0 and fast.speedup > 1.02


def test_the_same_kernel_is_neutral_with_a_tight_ci() -> None:
    rng = random.Random(0)
    same = _compare(Sim(jitter=lambda i: rng.random()), 50.0, 50.0)  # 0-1 us of seeded noise per launch
    lo, hi = same.ratio_ci
    assert same.verdict == "neutral" and lo <= 1.0 <= hi and (hi - lo) / 2 < 0.01


def test_a_drift_across_the_run_cancels_in_the_pairs() -> None:
    """Kernels slow down over the run (a GPU heating up): absolute times spread, the ratio does not."""
    drift = lambda i: i * 0.004  # noqa: E731 - +0.004 us per launch
    r = _compare(Sim(jitter=drift), 100.0, 102.0, max_pairs=200, target_halfwidth=0.0005)
    assert r.a_stats.max - r.a_stats.min > 5.0  # the baseline alone drifted by more than 5 %
    assert r.ratio_median == pytest.approx(1.02, abs=0.003) and r.verdict == "regressed"


def test_warm_mode_times_graph_replays() -> None:
    r = _compare(Sim(), 20.0, 25.0, timing="warm")
    assert r.timer == "graph_replay" and r.verdict_mode == "warm"
    assert r.ratio_median == pytest.approx(1.25, rel=1e-3) and r.verdict == "regressed"
    assert r.launches_per_sample == [10, 8]


class _Out:
    def __init__(self, shape: tuple[int, ...], dtype: str) -> None:
        self.shape, self.dtype = shape, dtype


def test_different_output_shapes_or_dtypes_are_refused_before_timing() -> None:
    t = FakeTorch(Sim())
    calls = {"a": 0, "b": 0}

    def side(name: str, out: _Out) -> paired.Side:
        def run() -> _Out:
            calls[name] += 1
            return out

        return paired.Side(name, [run])

    req = CompareRequest(a="a", b="b")
    with pytest.raises(NotComparableError, match=r"a .*\(4, 4\).*b .*\(4, 8\)"):
        compare_sides(side("a", _Out((4, 4), "bf16")), side("b", _Out((4, 8), "bf16")), req, t)
    with pytest.raises(NotComparableError, match="fp32"):
        compare_sides(side("a", _Out((4, 4), "bf16")), side("b", _Out((4, 4), "fp32")), req, t)
    assert calls == {"a": 2, "b": 2}  # one call each, per attempt: nothing was timed


def test_a_side_raising_mid_run_is_a_typed_error_naming_it() -> None:
    t = FakeTorch(Sim())
    n = [0]
    kernel = t.kernel(10.0)

    def flaky() -> None:
        n[0] += 1
        if n[0] > 40:
            raise ValueError("index out of range in the candidate")
        kernel()

    a = paired.Side("baseline", [t.kernel(10.0)])
    b = paired.Side("candidate", [flaky])
    with pytest.raises(SideFailedError, match="side candidate raised ValueError") as info:
        compare_sides(a, b, CompareRequest(a="a", b="b"), t)
    assert info.value.side == "candidate" and n[0] == 41


def test_paired_ratio_ci_and_verdicts() -> None:
    med, lo, hi = paired_ratio_ci([1.0, 1.01, 0.99, 1.0, 1.02, 0.98] * 5)
    assert med == pytest.approx(1.0) and lo <= 1.0 <= hi
    assert paired_ratio_ci([1.0, 1.01, 0.99] * 5) == paired_ratio_ci([1.0, 1.01, 0.99] * 5)  # seeded
    assert ratio_verdict(1.03, 1.02, 1.04, "lower", 0.01, 0.02) == "regressed"
    assert ratio_verdict(1.03, 1.02, 1.04, "higher", 0.01, 0.02) == "improved"
    assert ratio_verdict(0.97, 0.96, 0.98, "lower", 0.01, 0.02) == "improved"
    assert ratio_verdict(1.005, 1.001, 1.009, "lower", 0.01, 0.02) == "neutral"  # real but below min_effect
    assert ratio_verdict(1.0, 0.9, 1.1, "lower", 0.01, 0.02) == "unstable"


KERNEL = """import helper


def make():
    def run():
        s = 0
        for i in range(helper.N):
            s += i

    return run
"""


def test_cli_compare_keeps_the_two_sides_modules_apart(tmp_path: Path, run_cli: Any) -> None:
    """Both trees hold kern.py importing helper.py; each side must get its own helper (N 3000 vs 3600)."""
    for side, n in (("base", 3000), ("cand", 3600)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "kern.py").write_text(KERNEL)
        (tmp_path / side / "helper.py").write_text(f"N = {n}\n")
    res = run_cli(
        "--json", "compare", "kern.py:make", "kern.py:make", "--root-a", str(tmp_path / "base"),
        "--root-b", str(tmp_path / "cand"), "--device", "cpu", "--max-wall-s", "5",
    )  # fmt: skip
    assert res.code == 0, res.err
    r = json.loads(res.out)
    assert r["timer"] == "cpu_perf_counter_ns" and r["verdict"] == "regressed"
    assert r["ratio_median"] == pytest.approx(1.2, rel=0.08)


def test_time_compare_of_a_missing_side_is_typed(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def make():\n    return lambda: None\n")
    from kernelpilot.foundation.errors import InputFileError

    with pytest.raises(InputFileError, match="side B"):
        time_compare(CompareRequest(a="a.py:make", b="nope.py:make", workdir=str(tmp_path), device="cpu"))


class FakeObserver:
    """The seam of kernelpilot.guard.observe (docs/eval-design.md): observe each side, findings into B's."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.timed: list[float | None] = []

    def observe(
        self, torch: Any, closures: list[Any], calls: int, timed_us: float | None = None, watch: Any = None
    ) -> dict[str, Any]:
        self.calls.append(calls)
        self.timed.append(timed_us)
        return {"observed": True, "calls": calls, "closures": len(closures)}

    def with_findings(self, obs: dict[str, Any], watch: Any) -> dict[str, Any]:
        return {**obs, "watch_findings": watch.findings()}


class FakeWatch:
    def __init__(self) -> None:
        self.asked = 0
        self.ended = False
        self.started: list[str] = []

    def replaced(self) -> list[str]:
        return []

    def findings(self) -> list[str]:
        self.asked += 1
        return ["thread started: x"]


def test_each_side_is_observed_after_timing_and_the_watch_findings_go_to_the_candidate() -> None:
    t = FakeTorch(Sim())
    obs, watch = FakeObserver(), FakeWatch()
    a = paired.Side("baseline", [t.kernel(10.0)])
    b = paired.Side("candidate", [t.kernel(10.0), t.kernel(10.0)])
    r = compare_sides(a, b, CompareRequest(a="a", b="b", warmup_min_ms=0), t, watch=watch, observer=obs)
    assert obs.calls == [10, 10] and watch.asked == 1
    # each side is judged against its own median: the observer may skip the trace when that settles it
    assert obs.timed == [pytest.approx(r.a_stats.median), pytest.approx(r.b_stats.median)]
    assert r.observations is not None and r.observations["baseline"]["closures"] == 1
    assert r.observations["candidate"]["watch_findings"] == ["thread started: x"]
    assert r.watch_findings == ["thread started: x"]


def test_a_factory_with_a_root_keyword_is_told_its_sides_root(tmp_path: Path) -> None:
    for side in ("base", "cand"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "k.py").write_text(
            "import os\nSEEN = []\n\ndef make(root=None):\n    SEEN.append(root)\n    return lambda: None\n"
        )
    r = time_compare(
        CompareRequest(
            a="k.py:make", b="k.py:make", root_a=str(tmp_path / "base"), root_b=str(tmp_path / "cand"),
            device="cpu", max_wall_s=1, min_pairs=2,
        )
    )  # fmt: skip
    import sys

    seen = {
        name: mod.SEEN
        for name, mod in sys.modules.items()
        if name.startswith("_kernelpilot_side_")
        and str(getattr(mod, "__file__", "")).startswith(str(tmp_path))
    }
    assert sorted(v[0] for v in seen.values()) == [str(tmp_path / "base"), str(tmp_path / "cand")]
    assert r.pairs >= 2


class RaisingObserver(FakeObserver):
    def observe(
        self, torch: Any, closures: list[Any], calls: int, timed_us: float | None = None, watch: Any = None
    ) -> dict[str, Any]:
        if len(self.calls) == 1:
            raise ValueError("the candidate failed when observed")
        return super().observe(torch, closures, calls, timed_us)


def test_a_side_failing_while_observed_is_a_typed_error_naming_it() -> None:
    t = FakeTorch(Sim())
    a = paired.Side("baseline", [t.kernel(10.0)])
    b = paired.Side("candidate", [t.kernel(10.0)])
    with pytest.raises(SideFailedError, match="side candidate raised ValueError during observation"):
        compare_sides(a, b, CompareRequest(a="a", b="b", warmup_min_ms=0), t, observer=RaisingObserver())


def test_blocks_alternate_which_side_goes_first_so_a_position_effect_cancels() -> None:
    """Identical commands whose first run of every block reads 2 % high (a cold start after the previous
    block): with A first in every block each ratio would favour B (0.990, improved at a 1 % minimum effect);
    alternating A,B,B,A and B,A,A,B puts it on each side in turn, and the verdict is neutral."""
    calls: list[int] = []

    def side(s: int) -> Any:
        def measure() -> float:
            first = len(calls) % 4 == 0
            calls.append(s)
            return 100.0 * (1.02 if first else 1.0)

        return measure

    run = paired.alternate_metrics((side(0), side(1)), 8)
    assert calls[:8] == [0, 1, 1, 0, 1, 0, 0, 1] and len(run.ratios) == 8
    assert run.ratios[0] == pytest.approx(200 / 202) and run.ratios[1] == pytest.approx(202 / 200)
    assert run.a[:4] == [102.0, 100.0, 100.0, 100.0] and run.b[:4] == [100.0, 100.0, 102.0, 100.0]
    med, lo, hi = paired_ratio_ci(run.ratios)
    assert med == pytest.approx(1.0, abs=2e-4) and lo < 1.0 < hi
    assert ratio_verdict(med, lo, hi, "lower", 0.01, 0.02) == "neutral"
    only_abba = [200 / 202] * 8  # what A,B,B,A alone measures here
    assert ratio_verdict(*paired_ratio_ci(only_abba), "lower", 0.005, 0.02) == "improved"


def test_the_cpu_timer_alternates_the_first_side() -> None:
    order: list[str] = []
    a = paired.Side("A", [lambda: order.append("A")])
    b = paired.Side("B", [lambda: order.append("B")])
    timer = paired.CpuBlockTimer(a, b, 1e-6)
    blocks = timer.run(3) + timer.run(1)  # the order carries over from one round to the next
    assert "".join(order) == "ABBA" + "BAAB" + "ABBA" + "BAAB" and len(blocks) == 4


def test_the_band_rule_needs_the_whole_ci_beyond_the_minimum_effect() -> None:
    """1.5 % slower with a CI reaching 1.008: the change is real (CI above 1) but not shown to be at least
    1 %: neutral; the same CI with a 0.5 % minimum effect: regressed; an allowance widens the CI first."""
    assert ratio_verdict(1.015, 1.008, 1.022, "lower", 0.01, 0.02) == "neutral"
    assert ratio_verdict(1.015, 1.008, 1.022, "lower", 0.005, 0.02) == "regressed"
    assert ratio_verdict(1.015, 1.008, 1.022, "lower", 0.005, 0.02, allowance=0.003) == "neutral"
    assert ratio_verdict(0.98, 0.975, 0.985, "lower", 0.01, 0.02) == "improved"
    assert ratio_verdict(0.98, 0.975, 0.992, "lower", 0.01, 0.02) == "neutral"


def test_time_compare_over_mcp_is_the_tool_issue_24_names(tmp_path: Path) -> None:
    """The tool is `time_compare` (no `compare_kernels`); its arguments include the placement allowance,
    and a side ten times the work reads regressed through the real MCP client (CPU fallback here)."""
    import anyio
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    for name, n in (("a", 2000), ("b", 20000)):
        (tmp_path / f"{name}.py").write_text(
            f"def make():\n    def run():\n        return sum(range({n}))\n\n    return run\n"
        )

    async def go() -> tuple[list[str], Any]:
        async with Client(build_server("measure")) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            args = {"a": "a.py:make", "b": "b.py:make", "workdir": str(tmp_path), "device": "cpu"}
            args |= {"placement_allowance": 0.01, "max_wall_s": 5}
            res = await client.call_tool("time_compare", args)
            return tools, res

    tools, res = anyio.run(go)
    assert "time_compare" in tools and "compare_kernels" not in tools
    assert not res.is_error, res.content
    out = res.structured_content
    assert out["verdict"] == "regressed" and out["ratio_median"] > 3.0 and out["order"] == "ABBA/BAAB"
    assert "placement allowance 1.0%" in out["verdict_note"]


def test_the_gpu_timer_alternates_the_first_side_and_assigns_each_slot_to_its_side() -> None:
    """On the simulated stream (warm, no graph: a slot launches its side's closure `inner` times): two
    rounds of one block launch A,B,B,A then B,A,A,B, and each block's samples land on the right side."""
    t = FakeTorch(Sim())
    order: list[str] = []

    def labelled(label: str, us: float) -> paired.Side:
        k = t.kernel(us)

        def run() -> None:
            order.append(label)
            k()

        return paired.Side(label, [run])

    timer = paired.GpuBlockTimer(
        t, labelled("A", 10.0), labelled("B", 20.0), "warm", (10.0, 20.0), use_graph=False
    )
    m_a, m_b = timer.launches
    seen = []
    blocks = []
    for _ in range(2):  # the order carries over from one round to the next
        order.clear()
        blocks += timer.run(1)
        seen += order[-2 * (m_a + m_b) :]  # a batch re-run behind a longer hold repeats; the last one counts
    assert (
        seen == ["A"] * m_a + ["B"] * (2 * m_b) + ["A"] * m_a + ["B"] * m_b + ["A"] * (2 * m_a) + ["B"] * m_b
    )
    for blk in blocks:
        assert blk.a == pytest.approx((10.0, 10.0), abs=0.01) and blk.b == pytest.approx(
            (20.0, 20.0), abs=0.01
        )
        assert blk.ratio == pytest.approx(2.0, abs=1e-3)


def test_compare_refuses_to_time_once_a_side_started_a_thread(tmp_path: Path) -> None:
    """The Watch is checked after both sides load and before any timing: nothing is timed, a typed error."""
    from kernelpilot.guard.errors import GuardFindingsError

    (tmp_path / "a.py").write_text("def make():\n    return lambda: None\n")
    (tmp_path / "b.py").write_text(
        "import threading\n\nthreading.Thread(target=lambda: None, name='sneak').start()\n\n\n"
        "def make():\n    return lambda: None\n"
    )
    req = CompareRequest(a="a.py:make", b="b.py:make", workdir=str(tmp_path), device="cpu", observe=True)
    with pytest.raises(GuardFindingsError, match=r"thread started: sneak .*nothing was timed"):
        time_compare(req)
    honest = time_compare(req.model_copy(update={"b": "a.py:make", "max_wall_s": 1, "min_pairs": 2}))
    assert honest.observations is not None and honest.watch_findings == []
    cand = honest.observations["B"]  # no GPU: no trace, but observed for timers, threads and outputs
    assert cand["observed"] is False and "CPU timing" in cand["why_unobserved"]


def test_a_side_that_times_at_zero_gets_no_ratio_but_keeps_its_samples_and_observation() -> None:
    """H100 guard suite: a candidate that returns a cached answer whenever kernelpilot's timer is on its
    stack timed at 0 us or less, and the ratio CI raised `paired ratios must be finite and > 0`, so eval read
    `failed` instead of the guard's rejection. Now the comparison ends with no ratio (verdict unstable, the
    note naming the side), and the samples and the observation still reach the guard."""
    t = FakeTorch(Sim())
    first = t.kernel(10.0)
    cached = first()
    obs = FakeObserver()
    a = paired.Side("baseline", [first])
    b = paired.Side("candidate", [lambda: cached])  # no work on the GPU when timed
    r = compare_sides(a, b, CompareRequest(a="a", b="b", warmup_min_ms=0), t, observer=obs)
    assert r.ratio_median is None and r.ratio_ci is None and r.speedup is None
    assert r.verdict == "unstable" and "side candidate timed at 0 us or less" in r.verdict_note
    assert r.stop_reason == "stopped: samples at 0 us or less" and r.b_stats.median <= 0 < r.a_stats.median
    assert r.observations is not None and set(r.observations) == {"baseline", "candidate"}
    assert "ratio candidate/baseline: none" in r.render_text()
    # what eval reads back from the timing process: a result, not `failed` (NaN ratios would dump as null)
    from kernelpilot.tasks.paired import compare_outcome
    from kernelpilot.timing.models import CompareResult

    assert r.ratios == [] and CompareResult.model_validate_json(r.model_dump_json()) == r
    timed = compare_outcome(0, r.model_dump_json(), "")
    assert timed.fields["status"] == "unstable" and timed.fields["speedup"] is None
    assert timed.fields["candidate_median"] <= 0 and "side candidate" in timed.message
    blk = paired.Block((10.0, 10.0), (0.0, 0.1), 0.0, 1.0)
    assert blk.ratio != blk.ratio  # NaN
    assert (
        paired.non_positive([blk]) is not None
        and paired.non_positive([paired.Block((1, 1), (1, 1), 0, 1)]) is None
    )
