"""Clock readings during timed work (timing/clocks.py): tagging windows, the throttle drop rule, recovery
waits, the evidence, and the drop/redo loop of the paired schedule (timing/paired.run_blocks), on readings
shaped as NVML returns them. No GPU here: NVML itself is replaced by a stand-in module (the hardware edge)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.waiting import wait_until

from kernelpilot.timing import clocks, paired
from kernelpilot.timing.clocks import Reading

MAX = 1980.0
POWER_CAP, HW_THERMAL, IDLE = 0x4, 0x40, 0x1


def _sampler(readings: list[Reading], max_mhz: float | None = MAX) -> clocks.ClockSampler:
    """A sampler holding recorded readings (never started: the replay is the record)."""
    s = clocks.ClockSampler(clocks.ReplaySource(readings, max_sm_mhz=max_mhz, power_limit_w=700.0))
    s._readings = list(readings)
    return s


def test_tag_takes_the_readings_inside_a_window_and_the_one_in_effect_at_its_start() -> None:
    rs = [
        Reading(0.0, 1980, 300, 40, 0),
        Reading(1.0, 1755, 690, 60, POWER_CAP),
        Reading(2.0, 1980, 400, 55, 0),
    ]
    t = clocks.tag(rs, 0.5, 1.5)
    assert t.readings == 2 and t.sm_mhz_min == 1755 and t.sm_mhz_max == 1980
    assert t.reasons == POWER_CAP and t.power_w_max == 690 and t.temp_c_max == 60
    assert clocks.tag(rs, -2.0, -1.0).readings == 0


def test_the_drop_rule_needs_a_low_clock_and_a_slowdown_reason() -> None:
    policy = clocks.ThrottlePolicy()
    at_cap = clocks.Tag(3, 1755, 1830, 695, 70, POWER_CAP)
    assert policy.why_dropped(at_cap, MAX) is None  # 89 % of max: slowed, but above NVBench's 75 %
    hot = clocks.Tag(3, 1200, 1500, 500, 88, HW_THERMAL)
    why = policy.why_dropped(hot, MAX)
    assert why is not None and "1200 MHz < 75% of 1980 MHz" in why and "hardware thermal slowdown" in why
    assert policy.why_dropped(clocks.Tag(2, 345, 345, 80, 35, IDLE), MAX) is None  # idle, not a throttle
    assert policy.why_dropped(clocks.Tag(2, 1200, 1200, None, None, None), MAX) is not None  # AMD: clock only
    assert policy.why_dropped(hot, None) is None  # no rated clock: nothing to compare with


def test_evidence_says_when_the_gpu_could_not_hold_its_clock() -> None:
    rs = [Reading(i * 0.005, 1755 + (i % 3) * 30, 690 + i % 5, 65, POWER_CAP) for i in range(100)]
    ev = clocks.evidence(_sampler(rs), [(0.0, 1.0)], clocks.DropLog(), clocks.ThrottlePolicy())
    assert ev.source == "replay" and ev.readings == 100 and ev.clock_held is False
    assert ev.sm_mhz_min == 1755 and ev.sm_mhz_max == 1815 and ev.reasons_seen == {"software power cap": 1.0}
    assert "could not hold its clock" in ev.note and "software power cap 100%" in ev.note
    cool = [Reading(i * 0.005, 1980, 300, 40, 0) for i in range(50)]
    ev2 = clocks.evidence(_sampler(cool), [(0.0, 1.0)], clocks.DropLog(), clocks.ThrottlePolicy())
    assert ev2.clock_held is True and "could not hold" not in ev2.note
    none = clocks.evidence(clocks.ClockSampler(None), [(0.0, 1.0)], clocks.DropLog(), clocks.ThrottlePolicy())
    assert none.source == "none" and none.clock_held is None and "not read" in none.note


@dataclass
class ScriptedTimer:
    """Blocks at given (t0, t1) on the recorded timeline, ratio 1.03-1.031 (the engine's BlockTimer shape)."""

    spans: list[tuple[float, float]]
    method: str = "scripted"
    note: str = ""
    launches: tuple[int, int] = (1, 1)
    gap_free: bool = True
    i: int = 0
    runs: list[int] = field(default_factory=list)

    def block_s(self) -> float:
        return 0.01

    def run(self, n: int) -> list[paired.Block]:
        self.runs.append(n)
        out = []
        for _ in range(n):
            t0, t1 = self.spans[self.i % len(self.spans)]
            self.i += 1
            out.append(paired.Block(a=(100.0, 100.0), b=(103.0 + 0.1 * (self.i % 3), 103.0), t0=t0, t1=t1))
        return out


def test_blocks_run_under_a_thermal_slowdown_are_dropped_and_redone() -> None:
    # 1 s of readings: a hardware thermal slowdown to 1100 MHz between 0.30 and 0.40 s, else 1980 MHz
    rs = [
        Reading(
            i * 0.005,
            1100 if 0.3 <= i * 0.005 < 0.4 else 1980,
            600,
            80,
            HW_THERMAL if 0.3 <= i * 0.005 < 0.4 else 0,
        )
        for i in range(200)
    ]
    spans = [(k * 0.05, k * 0.05 + 0.04) for k in range(20)]  # 20 blocks over the second
    timer = ScriptedTimer(spans)
    opt = paired.Options(min_pairs=16, max_pairs=20, round_s=0.2, target_halfwidth=1e-9, max_wall_s=30)
    opt.policy.recovery_budget_s = 0.0  # the record cannot recover: do not wait
    run = paired.run_blocks(timer, _sampler(rs), opt, MAX)
    # blocks starting at 0.30 and 0.35 s (and the one at 0.25 s, whose end overlaps 0.30) were dropped
    assert len(run.log.dropped) == 3 and all("hardware thermal slowdown" in d for d in run.log.dropped)
    assert len(run.blocks) == 20 and run.stop_reason.startswith("max_pairs")
    assert run.ratios == pytest.approx([1.03] * 20, abs=0.002)
    assert run.log.persistent  # no recovery within a zero budget: later throttled blocks are kept


def test_waiting_for_recovery_reads_fresh_readings_until_the_clock_is_back() -> None:
    slow = Reading(0.0, 1100, 600, 90, HW_THERMAL)
    src = clocks.ReplaySource([slow, slow, slow, Reading(0.0, 1980, 300, 70, 0)], max_sm_mhz=MAX)
    policy = clocks.ThrottlePolicy(recovery_delay_s=0.0)
    with clocks.ClockSampler(src, period_s=0.001) as sampler:
        ok, waited = clocks.wait_for_recovery(sampler, policy, MAX, budget_s=30.0)
    assert ok and src.i >= 4 and waited < 30.0
    stuck = clocks.ReplaySource([slow], max_sm_mhz=MAX)
    with clocks.ClockSampler(stuck, period_s=0.001) as sampler:
        ok, _ = clocks.wait_for_recovery(sampler, policy, MAX, budget_s=0.05)
    assert not ok


class FakeNvml:
    """The few pynvml calls NvmlSource makes, with the constants and error class of the real module."""

    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self, with_event_reasons: bool) -> None:
        if with_event_reasons:
            self.nvmlDeviceGetCurrentClocksEventReasons = lambda h: POWER_CAP

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Any) -> int:
        return HW_THERMAL

    def nvmlDeviceGetMaxClockInfo(self, h: Any, clock: int) -> int:
        return 1980

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        return 700000  # mW

    def nvmlDeviceGetClockInfo(self, h: Any, clock: int) -> int:
        return 1755

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        return 66


def test_nvml_source_maps_fields_and_survives_an_unsupported_one() -> None:
    src = clocks.NvmlSource(FakeNvml(True), object(), "H100")
    assert src.max_sm_mhz == 1980 and src.power_limit_w == 700.0
    r = src.read()
    assert r.sm_mhz == 1755 and r.power_w is None and r.temp_c == 66 and r.reasons == POWER_CAP
    old = clocks.NvmlSource(FakeNvml(False), object(), "A100")  # drivers before "clocks event reasons"
    assert old.read().reasons == HW_THERMAL
    assert clocks.reason_names(POWER_CAP | HW_THERMAL) == ["software power cap", "hardware thermal slowdown"]


class FakeAmdSmi:
    """The amdsmi calls AmdSmiSource makes (names and dict keys of ROCm's amdsmi Python binding)."""

    class AmdSmiException(Exception):
        pass

    class AmdSmiClkType:
        GFX = "gfx"

    class AmdSmiTemperatureType:
        HOTSPOT = "hotspot"

    class AmdSmiTemperatureMetric:
        CURRENT = "current"

    def amdsmi_get_clock_info(self, h: Any, clk: str) -> dict[str, int]:
        return {"clk": 1650, "min_clk": 500, "max_clk": 2100}

    def amdsmi_get_power_info(self, h: Any) -> dict[str, int]:
        return {"current_socket_power": 610, "average_socket_power": 600, "power_limit": 750}

    def amdsmi_get_temp_metric(self, h: Any, kind: str, metric: str) -> int:
        return 71

    def amdsmi_shut_down(self) -> None:
        return None


def test_amdsmi_source_maps_clock_power_and_temperature_and_leaves_reasons_unknown() -> None:
    src = clocks.AmdSmiSource(FakeAmdSmi(), object(), "MI300X")
    assert src.max_sm_mhz == 2100 and src.power_limit_w == 750
    r = src.read()
    assert (r.sm_mhz, r.power_w, r.temp_c, r.reasons) == (1650, 610, 71, None)


FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "timing" / "nvml_gemm_h100.json"


def _recorded() -> tuple[list[Reading], dict[str, Any]]:
    doc = json.loads(FIXTURE.read_text())
    return [Reading.from_list(row) for row in doc["readings"]], doc


def test_recorded_h100_gemm_trace_reaches_the_power_cap_and_the_evidence_says_so() -> None:
    rs, doc = _recorded()
    assert doc["sm_mhz_rated_max"] == 1980.0 and doc["power_limit_w"] == 700.0
    ev = clocks.evidence(_sampler(rs), [(0.0, 4.0)], clocks.DropLog(), clocks.ThrottlePolicy())
    assert ev.clock_held is False and ev.sm_mhz_min == 1065 and ev.sm_mhz_max == 1980
    assert ev.reasons_seen["software power cap"] == pytest.approx(0.94, abs=0.02)
    assert ev.power_w_max is not None and ev.power_w_max > 690  # at the 700 W enforced limit
    # before the GEMM's power ramped (first 0.2 s): full clock, no reason -> not dropped
    policy = clocks.ThrottlePolicy()
    assert policy.why_dropped(clocks.tag(rs, 0.0, 0.2), MAX) is None
    # the first dip (1065 MHz at ~0.93 s) and the steady state at the cap (1230-1455 MHz) are under 75 %
    dip = policy.why_dropped(clocks.tag(rs, 0.94, 0.95), MAX)
    assert dip is not None and "1065 MHz" in dip and "software power cap" in dip
    assert policy.why_dropped(clocks.tag(rs, 3.0, 3.01), MAX) is not None
    # ... while a 60 % threshold keeps the steady state and drops only the dip
    loose = clocks.ThrottlePolicy(threshold=0.6)
    assert loose.why_dropped(clocks.tag(rs, 3.0, 3.01), MAX) is None
    assert loose.why_dropped(clocks.tag(rs, 0.94, 0.95), MAX) is not None


def test_replayed_trace_through_the_paired_schedule_drops_blocks_at_the_cap_then_keeps_them() -> None:
    """The recorded readings replayed under blocks of 40 ms from 0 to 4 s: blocks before the cap are kept,
    the first throttled ones dropped; the slowdown cannot be waited out (budget 0), so later ones are kept."""
    rs, _ = _recorded()
    spans = [(k * 0.05, k * 0.05 + 0.04) for k in range(80)]
    timer = ScriptedTimer(spans)
    opt = paired.Options(min_pairs=80, max_pairs=80, round_s=0.5, target_halfwidth=1e-9, max_wall_s=60)
    opt.policy.recovery_budget_s = 0.0
    run = paired.run_blocks(timer, _sampler(rs), opt, MAX)
    assert run.log.dropped and all("software power cap" in d for d in run.log.dropped)
    assert run.log.persistent and len(run.blocks) == 80
    kept_starts = [b.t0 for b in run.blocks]
    assert 0.0 in kept_starts and not any(0.9 < t < 1.0 for t in kept_starts[:20])


class BrokenSource(clocks.ReplaySource):
    def read(self) -> Reading:
        if self.i >= 2:
            raise OSError("NVML driver went away")
        return super().read()


def test_a_reader_that_fails_mid_run_keeps_its_readings_and_says_why() -> None:
    src = BrokenSource([Reading(0.0, 1980, 300, 40, 0)], max_sm_mhz=MAX)
    sampler = clocks.ClockSampler(src, period_s=0.001)
    with sampler:
        wait_until(lambda: sampler.failed is not None, "the reader to fail")
    assert sampler.count() == 2
    ev = clocks.evidence(sampler, [(0.0, 1e9)], clocks.DropLog(), clocks.ThrottlePolicy())
    assert ev.readings == 2 and "stopped early (OSError: NVML driver went away)" in ev.note
