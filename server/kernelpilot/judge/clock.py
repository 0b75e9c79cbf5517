"""Batches of calls timed on the judge's own monotonic clock (docs/guard.md, "The isolated judge").

Per pair of batches: B fresh input sets from secret seeds (the same values for both sides of the pair).
For each side in turn (the order alternates per pair), a call at a time: the runner's process group frozen,
the call's values written into its slot, the group thawed; the clock starts, the call is sent, its reply
stops the clock and the group is frozen at once (work left after a reply happens outside the clock and is
seen as unwritten output). The figure is the sum of the batch's call times / B.

After each batch, drawn after it returned (OS randomness): positions of every call's output checked for
the poison (an output not complete when the call returned), and one call whose whole output is kept and
checked against the float64 reference after the timing (`rejected_timed_output`). The runner's own
per-call times are advisory: a side whose in-process figure exceeds the judge's bound is
`rejected_timer_disagree` (its clock cannot read more than the time the judge saw pass).
"""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.guard.backend import backend_for
from kernelpilot.guard.models import Rejection
from kernelpilot.guard.semantic import CallContext, measure, numel, within
from kernelpilot.guard.timed import reference_f64
from kernelpilot.judge.checks import Checker, Prepared, as_output, reject
from kernelpilot.judge.contract import JudgeContract, fresh_seed
from kernelpilot.judge.models import SideTiming
from kernelpilot.judge.procs import Side

# ~20 ms of calls per batch: the figure of a batch averages a few to ~60 calls' round trips (each call's
# pipe round trip and wake-up, ~0.1 ms on a quiet CPU, several ms on a loaded one), while the fresh values,
# the contract factory run once per timed call, stay a bounded share of the eval (bench/guard_overhead.py).
TARGET_BATCH_S = 0.02
MAX_BATCH = 64
POISON_SAMPLES = 2048  # positions per output checked for the poison after every timed call
# The runner's in-process figure may exceed the judge's bound by this much before it is called a lie
# (two clocks read at different instants of the same batch).
DISAGREE_FACTOR = 1.05
DISAGREE_SLACK_US = 200.0
# The runner's figure falls short of the judge's by the wake-up after SIGCONT and the reply, which on a
# loaded 2-core machine were measured at several ms a batch (an honest 14 us call read 180 us per call on
# the judge's clock in a batch of 45), so only a clock that reads almost nothing is called replaced: under
# this share of the judge's figure and under UNDER_US per call, in most batches.
UNDER_SHARE = 0.01
UNDER_US = 1.0


@dataclass
class Kept:
    side: str
    inputs: list[Any]
    outputs: list[Any]


@dataclass
class Timed:
    timing: dict[str, SideTiming] = field(default_factory=dict)
    ratios: list[float] = field(default_factory=list)
    rejection: Rejection | None = None
    rejected_side: str = ""
    kept: list[Kept] = field(default_factory=list)
    seconds_fresh: float = 0.0
    seconds_checks: float = 0.0


def batch_size(per_call_s: float, mode: str) -> int:
    if mode == "cold":
        return 1
    return max(1, min(MAX_BATCH, math.ceil(TARGET_BATCH_S / max(per_call_s, 1e-7))))


class Clock:
    def __init__(
        self, jc: JudgeContract, sides: list[Side], checkers: dict[str, Checker], prep: Prepared, mode: str
    ) -> None:
        self.jc, self.sides, self.checkers, self.prep, self.mode = jc, sides, checkers, prep, mode
        self.shape = jc.contract.shapes[0]
        self.got = Timed({s.name: SideTiming(sandbox=s.sandbox) for s in sides})

    def fresh(self, n: int) -> list[list[Any]]:
        t0 = time.perf_counter()
        sets = [self.jc.make(self.shape, fresh_seed()) for _ in range(n)]
        self.got.seconds_fresh += time.perf_counter() - t0
        return sets

    def batch(self, side: Side, sets: list[list[Any]]) -> tuple[dict[str, Any], float]:
        """One timed batch, a call at a time: (the reply, the sum of its calls' judge-clock seconds).

        A call's values land in its slot only while the runner's process group is frozen, right before the
        call is sent: no thread or process of the candidate sees the next call's values before its clock
        starts, so it cannot work ahead on them, in parallel with this call or during the judge's write
        (red-team `eager_thread_gemm`). Processes that left the group stay stopped for the whole batch."""
        arena = side.arena
        for i in range(len(sets)):
            arena.poison(i)
        side.cont(group_only=True)
        total, ns = 0, []
        for i, values in enumerate(sets):
            side.freeze(wait=True)
            arena.write(i, values)
            side.thaw()
            t0 = time.perf_counter_ns()
            reply = side.ask({"op": "run", "slots": [i]})
            t1 = time.perf_counter_ns()
            side.freeze()
            total += t1 - t0
            if not reply.get("ok"):
                side.stop()
                return reply, total / 1e9
            ns += reply.get("ns", [])
        side.stop()
        return {"ok": True, "ns": ns}, total / 1e9

    def layout_all(self, n: int) -> None:
        sets = self.fresh(1)
        for side in self.sides:
            self.checkers[side.name].layout(sets[0], self.prep, n)

    def calibrate(self) -> int:
        """Untimed batches of one call per side: the batch size from the slower side's time."""
        self.layout_all(1)
        worst = 0.0
        for side in self.sides:
            reply, secs = self.batch(side, self.fresh(1))
            if not reply.get("ok"):
                self._failed(side, reply)
                return 0
            worst = max(worst, secs)
        return batch_size(worst, self.mode)

    def _failed(self, side: Side, reply: dict[str, Any]) -> None:
        self.got.rejection = reject(
            "rejected_timed_output",
            f"a timed call failed where the checked calls passed: {reply.get('kind')}: {reply.get('error')}",
        )
        self.got.rejected_side = side.name

    def poisoned(self, side: Side, n: int) -> str:
        """Why an output of the batch was not complete when the call returned ("" when each was)."""
        import numpy as np

        be = self.prep.be
        rng = np.random.default_rng(secrets.randbits(128))  # drawn now, after the batch returned
        for i in range(n):
            for out in side.arena.outputs(i):
                total = numel(out)
                if not total:
                    continue
                picks = rng.integers(0, total, min(POISON_SAMPLES, total)).tolist()
                flat = out.reshape(-1)
                sample = flat[be.index(picks, flat)]
                left = be.poisoned_count(sample)
                if left:
                    return (
                        f"{left} of {len(picks)} sampled output positions of timed call {i + 1} of a batch "
                        "still "
                        "hold the poison written before the batch: the output was not complete when the call "
                        "returned (work left running after the reply, or skipped)"
                    )
        return ""

    def run(self, pairs: int, warmup: int) -> Timed:
        b = self.calibrate()
        if not b:
            return self.got
        self.layout_all(b)
        for st in self.got.timing.values():
            st.calls_per_batch = b
        for k in range(warmup + pairs):
            sets = self.fresh(b)
            order = self.sides if k % 2 == 0 else list(reversed(self.sides))
            secs: dict[str, float] = {}
            for side in order:
                reply, t = self.batch(side, sets)
                if not reply.get("ok"):
                    self._failed(side, reply)
                    return self.got
                if k < warmup:
                    continue
                why = self._after(side, reply, t, b, sets)
                if why is not None:
                    self.got.rejection, self.got.rejected_side = why, side.name
                    return self.got
                secs[side.name] = t
            if len(secs) == 2:
                self.got.ratios.append(secs["baseline"] / secs["candidate"])
        self.got.rejection, self.got.rejected_side = self.check_kept()
        return self.got

    def _after(
        self, side: Side, reply: dict[str, Any], t: float, b: int, sets: list[list[Any]]
    ) -> Rejection | None:
        st = self.got.timing[side.name]
        st.per_call_us.append(t * 1e6 / b)
        runner = sum(float(x) for x in reply.get("ns", [])) / 1e3 / b
        st.runner_us.append(runner)
        t0 = time.perf_counter()
        why = self.poisoned(side, b)
        pick = secrets.randbelow(b)
        self.got.kept.append(
            Kept(side.name, sets[pick], [self.prep.be.clone(o) for o in side.arena.outputs(pick)])
        )
        self.got.seconds_checks += time.perf_counter() - t0
        if why:
            return reject("rejected_timed_output", why)
        return self._disagree(st, runner)

    def _disagree(self, st: SideTiming, runner: float) -> Rejection | None:
        """The runner's clock against the judge's: more time than the judge saw pass (one batch), or a small
        fraction of it in most batches so far (a clock that was replaced or stopped)."""
        judge = st.per_call_us[-1]
        over = runner > DISAGREE_FACTOR * judge + DISAGREE_SLACK_US / max(1, st.calls_per_batch)
        low = [
            r < UNDER_US and r < UNDER_SHARE * j for r, j in zip(st.runner_us, st.per_call_us, strict=True)
        ]
        under = len(low) >= 2 and sum(low) * 2 > len(low)
        if not over and not under:
            return None
        how = "more than the judge's own clock allows" if over else (
            f"almost nothing (under {UNDER_US:g} us and {UNDER_SHARE:.0%} of the judge's clock) in most "
            "batches"
        )  # fmt: skip
        return Rejection(
            check="observation",
            status="rejected_timer_disagree",
            evidence=f"the runner's in-process timer read {runner:.1f} us per call, {how} ({judge:.1f} us "
            "per call "
            "around the whole batch): the candidate's process replaced or skewed its clock; the verdict uses "
            "only the judge's clock, and an honest version leaves the clock alone",
            numbers={"runner_us": runner, "judge_us": judge},
        )

    def check_kept(self) -> tuple[Rejection | None, str]:
        """One call per timed batch, drawn after it returned, against the float64 reference."""
        t0 = time.perf_counter()
        prep = self.prep
        try:
            for kept in self.got.kept:
                st = self.got.timing[kept.side]
                st.checked_calls += 1
                ref = reference_f64(self.jc, backend_for(kept.inputs[0], "cpu"), kept.inputs)
                ctx = CallContext(
                    prep.be, self.jc.dtype, "cpu", prep.tol, True, True, self.jc.contract.in_place
                )
                ctx.selection = prep.selection
                out = as_output(kept.outputs, prep.selection)
                if prep.selection is None and within(prep.be, out, ref, prep.tol):
                    continue  # the common case, in 4 passes (measure's ULP figures cost ~10x that)
                cmp = measure(ctx, out, ref, prep.tol)
                if not cmp.ok:
                    return reject(
                        "rejected_timed_output",
                        "a timed call's output (drawn after its batch returned) is not the float64 "
                        f"reference's on the values that call was given: {cmp.bad} of {cmp.total} out of "
                        f"tolerance (max rel err {cmp.max_rel_err:.3g}); every timed call gets new values "
                        "nobody could predict, so an honest version computes every output from the values "
                        "it is given",
                        bad=float(cmp.bad),
                        max_rel_err=cmp.max_rel_err,
                    ), kept.side
        finally:
            self.got.seconds_checks += time.perf_counter() - t0
        return None, ""
