"""The launch-closure factory `kernelpilot time` loads for a contract task: `kernelpilot.guard.timed:make`.

Why a fixed factory: with a contract the harness, not the candidate, builds the inputs (the contract's
factory on its first shape, a fresh seed per rotated set) and calls the candidate entry point, so the
agent cannot hand the timer a closure that does less than the checked one. The task is named by the
environment variable `KERNELPILOT_GUARD_TASK` (a task.json path), which `tasks.evaluate` sets.

Why fresh values and sampled outputs (docs/guard.md, "Under the timer"): a candidate that remembers its
answer per input address or per fingerprint of the values is correct on every checked call and 13x fast
under the timer. The timing loops call `TimedCall.before_timed` before each timed call, outside its event
pair (beside the L2 flush): it writes new values into the same input buffers, a window at a random offset
of a pool of contract-made values. They call `after_timed` right after the call's end event: it gathers
the output at 256 positions drawn at random per process into a ring buffer on the stream, so each call
is judged by what it returned when it returned it (a reused output buffer or a graph's static output is
judged right). After the timing, `checks` computes the float64 reference on the values a few random
sampled calls saw.
"""

from __future__ import annotations

import functools
import importlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kernelpilot.guard.backend import Backend, backend_for, random_positions
from kernelpilot.guard.errors import ContractError
from kernelpilot.guard.models import TimedCheck

if TYPE_CHECKING:
    from kernelpilot.guard.contract import Loaded

TASK_ENV = "KERNELPILOT_GUARD_TASK"
TIMING_SEED = 7_000_000  # seeds of the timed input sets, apart from the harness's checked ones
TIMED_SETS = 2  # input sets a contract task's timing rotates through (eval passes --rotate TIMED_SETS)
FRESH_SETS = 2  # contract-made input sets each pool of fresh values holds (windows slide over them)
CHECKED_CALLS = 4  # sampled timed calls per closure checked against a full float64 reference
RING_ROWS = 4096  # sampled outputs kept per closure (the last RING_ROWS timed calls)
MIN_ROWS_FOR_ROW_GRAIN = 16  # windows move by whole rows (last dim) when an input has at least this many


def load_task_contract(task_json: Path) -> tuple[Any, Path]:
    """(contract, workdir) of a task.json that declares one (`tasks.store.read_task` validates it)."""
    from kernelpilot.tasks.store import read_task

    task = read_task(task_json)
    if task.contract is None:
        raise ContractError(f"{task_json} declares no contract", "create the task with --contract")
    return task.contract, (task_json.parent / task.workdir).resolve()


def make(rotate: int = 1, root: str | None = None) -> list[Callable[[], Any]]:
    """One closure per rotated input set, each calling the candidate on the contract's first shape.

    `root` replaces the task's workdir (paired timing loads the baseline side from its own tree).
    """
    path = os.environ.get(TASK_ENV)
    if not path:
        raise ContractError(
            f"{TASK_ENV} is not set: this factory times a contract task's candidate",
            "run it through `kernelpilot eval` (or set the variable to the task.json path)",
        )
    from kernelpilot.guard.contract import Loaded

    contract, workdir = load_task_contract(Path(path))
    return closures_for(Loaded(contract, Path(root) if root else workdir), rotate)


def closures_for(loaded: Loaded, rotate: int) -> list[Callable[[], Any]]:
    """`make`'s closures for a loaded contract: `rotate` input sets, one pool of fresh values for all."""
    contract = loaded.contract
    shape = contract.shapes[0]
    sets = [loaded.make(shape, TIMING_SEED + i) for i in range(rotate)]
    be = backend_for(sets[0][0], loaded.device)
    fresh = Fresh.build(loaded, be, sets)
    closures: list[Callable[[], Any]] = []
    for inputs in sets:
        kwargs: dict[str, Any] = {}
        if contract.out:
            kwargs["out"] = _empty_like(loaded.reference(*inputs))
        call = functools.partial(loaded.candidate, *inputs, **kwargs)
        checked = Checked(loaded, be, inputs, fresh, contract.in_place[0] if contract.in_place else None)
        closures.append(TimedCall(call, kwargs.get("out"), view=contract.selection, checked=checked))
    return closures


class HasReference(Protocol):
    """What holds a contract's reference: the guard's `Loaded`, the judge's `JudgeContract`."""

    reference: Callable[..., Any]


def reference_f64(loaded: HasReference, be: Backend, inputs: list[Any]) -> Any:
    """The contract's reference on float64 copies of the float inputs (higher precision than any declared
    dtype); a reference that raises is the contract's error, not the candidate's."""
    args = [be.f64(x) if _is_array(x) and be.is_float(x) else _copy(be, x) for x in inputs]
    try:
        ref = loaded.reference(*args)
    except Exception as exc:  # the contract's reference failed: a contract error, not the candidate's
        raise ContractError(f"the contract reference raised {type(exc).__name__}: {exc}", "fix it") from exc
    be.sync()
    return ref


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _copy(be: Backend, x: Any) -> Any:
    return be.clone(x) if _is_array(x) else x


def first_part(x: Any) -> Any:
    """The array a timed output is judged by: itself, or the first array of a tuple output."""
    if isinstance(x, (tuple, list)) and x:
        return x[0]
    return x


class Fresh:
    """Pools of contract-made input values, one per input position, and the random windows each timed call
    takes from them (same buffers, new values). Float inputs get a window at a random offset (whole rows
    where the input has rows); the in-place contract's other inputs are restored to their values."""

    def __init__(self, be: Backend, pools: list[Any | None], grains: list[int], sizes: list[int]) -> None:
        self.be = be
        self.pools = pools
        self.grains = grains
        self.sizes = sizes
        self.rng = random.Random(int.from_bytes(os.urandom(8), "little"))
        windows = 1
        for pool, g, n in zip(pools, grains, sizes, strict=True):
            if pool is not None and g > 0:
                windows *= (FRESH_SETS - 1) * n // g + 1
        self.note = (
            f"fresh values before every timed call: a window of {FRESH_SETS} contract-made input sets at a "
            f"random offset, {windows:.3g} different input values"
        )

    @classmethod
    def build(cls, loaded: Loaded, be: Backend, sets: list[list[Any]]) -> Fresh | None:
        """Pools from the timed sets (and more contract-made sets up to FRESH_SETS); None when they do not
        fit in memory (the timing then checks the calls' outputs on the sets' own values)."""
        c = loaded.contract
        while len(sets) < FRESH_SETS:
            sets = [*sets, loaded.make(c.shapes[0], TIMING_SEED + 100 + len(sets))]
        pools: list[Any | None] = []
        grains: list[int] = []
        sizes: list[int] = []
        for j, x in enumerate(sets[0]):
            n = be.numel(x) if _is_array(x) else 0
            grain, pool = 0, None
            try:
                if _is_array(x) and be.is_float(x):
                    rows = n // int(x.shape[-1]) if x.ndim >= 2 and int(x.shape[-1]) > 0 else 0
                    grain = int(x.shape[-1]) if rows >= MIN_ROWS_FOR_ROW_GRAIN else 1
                    pool = be.cat_flat([s[j] for s in sets[:FRESH_SETS]])
                elif _is_array(x) and j in c.in_place:
                    pool = be.cat_flat([x])  # restored to its own values before every call
                if pool is not None:
                    be.write_window(x, pool, 0)  # writable? (offset 0 holds its own values: unchanged)
            except (RuntimeError, ValueError, MemoryError):  # read-only/expanded input, or no memory left
                grain, pool = 0, None  # for the pool (torch's OOM is a RuntimeError): left alone
            pools.append(pool)
            grains.append(grain)
            sizes.append(n)
        if all(p is None for p in pools):
            return None
        return cls(be, pools, grains, sizes)

    def draw(self) -> list[int]:
        return [
            self.rng.randrange((FRESH_SETS - 1) * n // g + 1) * g if p is not None and g > 0 else 0
            for p, g, n in zip(self.pools, self.grains, self.sizes, strict=True)
        ]

    def write(self, inputs: list[Any], offsets: list[int]) -> None:
        for x, pool, off in zip(inputs, self.pools, offsets, strict=True):
            if pool is not None:
                self.be.write_window(x, pool, off)

    def values(self, inputs: list[Any], offsets: list[int]) -> list[Any]:
        """The values a call with these offsets was given (views of the pools; the other inputs as now)."""
        return [
            self.be.window(pool, off, x) if pool is not None else x
            for x, pool, off in zip(inputs, self.pools, offsets, strict=True)
        ]


@dataclass
class Checked:
    """What a `TimedCall` needs to give its inputs fresh values and check its sampled calls."""

    loaded: Loaded
    be: Backend
    inputs: list[Any]
    fresh: Fresh | None
    in_place: int | None = None  # the input an in-place call returning None writes its output into


class TimedCall:
    """One timed closure; keeps its last output (`last`) and, with the timing loops' hooks, writes fresh
    values into its inputs before each timed call (`before_timed`) and samples what each call returned
    right after it (`after_timed`); `checks` then holds a few sampled calls against the float64 reference
    on the values they were given (`Observation.timed_checks`)."""

    def __init__(
        self, fn: Callable[[], Any], out: Any = None, view: Any = None, checked: Checked | None = None
    ) -> None:
        self.fn = fn
        self.out = out  # the contract's `out` buffer: the output when the candidate returns None
        self.view = view  # a contract's `Selection`: `last` is then what `selection.timed_view` samples
        self.checked = checked
        self.raw: Any = None
        self.current: list[int] | None = None  # the pool offsets of the values now in the inputs
        self.sampled = 0  # timed calls sampled so far
        self.log: list[tuple[int, list[int] | None]] = []  # per ring row: (numel, offsets) of its call
        self._ring: Any = None
        self._idx: Any = None
        self._n = -1
        self._pos: list[int] = []
        self.problems: dict[int, str] = {}  # ring row -> why its call's output was not a plain array
        fresh = checked.fresh if checked is not None else None
        self.fresh_note = fresh.note if fresh is not None else "no fresh values (the pools did not fit)"
        # what the guard's work under the timer cost (`Observation.fresh_cost`; bench/guard_overhead.py)
        self.cost = {"hooks_host_s": 0.0, "checks_s": 0.0, "fresh_us_per_call": 0.0, "sampled_calls": 0.0}

    def __call__(self) -> Any:
        got = self.fn()
        if got is None and self.out is not None:
            self.raw = self.out
        elif got is None and self.checked is not None and self.checked.in_place is not None:
            self.raw = self.checked.inputs[self.checked.in_place]
        else:
            self.raw = got
        return got

    @property
    def last(self) -> Any:
        """The last output as the timed-output check samples it."""
        return self._view(self.raw)

    def _view(self, out: Any) -> Any:
        if self.view is None:
            return first_part(out)
        from kernelpilot.guard.selection import timed_view

        return timed_view(self.view, out)

    def before_timed(self) -> None:
        """Fresh values into the same input buffers (issued before the L2 flush and the start event)."""
        c = self.checked
        if c is not None and c.fresh is not None:
            t0 = time.perf_counter()
            self.current = c.fresh.draw()
            c.fresh.write(c.inputs, self.current)
            self.cost["hooks_host_s"] += time.perf_counter() - t0

    def after_timed(self) -> None:
        """The output's sampled positions into the ring, right after the call's end event."""
        if self.checked is None:
            return
        t0 = time.perf_counter()
        try:
            self._sample()
        finally:
            self.cost["hooks_host_s"] += time.perf_counter() - t0

    def _sample(self) -> None:
        assert self.checked is not None
        be = self.checked.be
        raw = first_part(self.raw)
        problem = be.real_problem(raw, self.checked.loaded.device) if _is_array(raw) else ""
        if problem:  # checked before anything reads it: a lazy tensor would compute when read
            self.problems[self.sampled % RING_ROWS] = problem
            self._log(self.sampled % RING_ROWS, (-3, self.current))
            self.sampled += 1
            return
        out = self.last
        row = self.sampled % RING_ROWS
        self.sampled += 1
        if not _is_array(out):
            self._log(row, (-1, self.current))
            return
        n = be.numel(out)
        if self._ring is None:
            self._pos = random_positions(n, random.Random(int.from_bytes(os.urandom(8), "little")))
            self._n = n
            self._idx = be.index(self._pos, out)
            self._ring = be.ring(out, RING_ROWS, len(self._pos))
        if n != self._n:
            self._log(row, (-2, self.current))  # another size than the first sampled call's
            return
        be.take_into(out, self._idx, self._ring, row)
        self._log(row, (n, self.current))

    def _log(self, row: int, entry: tuple[int, list[int] | None]) -> None:
        if row < len(self.log):
            self.log[row] = entry
        else:
            self.log.append(entry)

    def checks(self, k: int = CHECKED_CALLS) -> list[TimedCheck]:
        """`k` random sampled calls against the float64 reference on the values each was given."""
        c = self.checked
        if c is None or (c.in_place is not None and c.fresh is None):
            return []  # an in-place call keeps changing its input: without fresh values, no reference
        # a call sampled before the first fresh values had the set's own values, since overwritten
        eligible = [r for r, (_, off) in enumerate(self.log) if off is not None or self.current is None]
        if not eligible:
            return []
        t0 = time.perf_counter()
        c.be.sync()
        pick = random.Random(int.from_bytes(os.urandom(8), "little"))
        lazy = [r for r in eligible if self.log[r][0] == -3][:1]  # a call that returned no plain array
        rows = sorted(set(lazy + pick.sample(eligible, min(k, len(eligible)))))
        got_rows = (
            dict(zip(rows, c.be.rows_f64(self._ring, rows), strict=True)) if self._ring is not None else {}
        )
        out: list[TimedCheck] = []
        for r in rows:
            n, offsets = self.log[r]
            values = (
                c.fresh.values(c.inputs, offsets) if c.fresh is not None and offsets is not None else c.inputs
            )
            ref = self._view(reference_f64(c.loaded, c.be, values))
            want = c.be.sample_at(ref, self._pos) if _is_array(ref) else [0.0]
            got = [float(n), *got_rows[r]] if n >= 0 and r in got_rows else None
            call = r + RING_ROWS * ((self.sampled - 1 - r) // RING_ROWS)  # the latest call in row r
            why = f"the timed call's {self.problems[r]}" if n == -3 else ""
            out.append(TimedCheck(call=call, got=_finite(got), ref=want, why=why))
        self.cost["checks_s"] = time.perf_counter() - t0
        self.cost["sampled_calls"] = float(self.sampled)
        self.cost["fresh_us_per_call"] = c.be.device_us(self._hooks)  # after the checks: it writes values
        return out

    def _hooks(self) -> None:
        self.before_timed()
        self.after_timed()


def _finite(vals: list[float] | None) -> list[float | None] | None:
    import math

    return None if vals is None else [v if math.isfinite(v) else None for v in vals]


def _empty_like(x: Any) -> Any:
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        torch: Any = importlib.import_module("torch")
        return torch.empty_like(x)
    import numpy

    return numpy.empty_like(x)
