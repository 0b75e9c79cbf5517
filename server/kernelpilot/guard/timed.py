"""The launch-closure factory `kernelpilot time` loads for a contract task: `kernelpilot.guard.timed:make`.

Why a fixed factory: with a contract the harness, not the candidate, builds the inputs (the contract's
factory on its first shape, a fresh seed per rotated set) and calls the candidate entry point, so the
agent cannot hand the timer a closure that does less than the checked one. The task is named by the
environment variable `KERNELPILOT_GUARD_TASK` (a task.json path), which `tasks.evaluate` sets.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelpilot.guard.errors import ContractError

TASK_ENV = "KERNELPILOT_GUARD_TASK"
TIMING_SEED = 7_000_000  # seeds of the timed input sets, apart from the harness's checked ones
TIMED_SETS = 2  # input sets a contract task's timing rotates through (eval passes --rotate TIMED_SETS)


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
    loaded = Loaded(contract, Path(root) if root else workdir)
    shape = contract.shapes[0]
    closures: list[Callable[[], Any]] = []
    for i in range(rotate):
        inputs = loaded.make(shape, TIMING_SEED + i)
        kwargs: dict[str, Any] = {}
        if contract.out:
            kwargs["out"] = _empty_like(loaded.reference(*inputs))
        call = functools.partial(loaded.candidate, *inputs, **kwargs)
        # an in-place op keeps changing its timed input, so its timed outputs are not checked (docs/guard.md)
        timed = TimedCall(call, kwargs.get("out"), view=contract.selection)
        closures.append(call if contract.in_place else timed)
    return closures


class TimedCall:
    """One timed closure; keeps its last output so the timing process can report what the timed calls
    returned (`Observation.timed_outputs`), which eval holds against the reference on the same inputs."""

    def __init__(self, fn: Callable[[], Any], out: Any = None, view: Any = None) -> None:
        self.fn = fn
        self.out = out  # the contract's `out` buffer: the output when the candidate returns None
        self.view = view  # a contract's `Selection`: `last` is then what `selection.timed_view` samples
        self.raw: Any = None

    def __call__(self) -> Any:
        got = self.fn()
        self.raw = self.out if got is None and self.out is not None else got
        return got

    @property
    def last(self) -> Any:
        """The last output as the timed-output check samples it (read after the timing, not per call)."""
        if self.view is None:
            return self.raw
        from kernelpilot.guard.selection import timed_view

        return timed_view(self.view, self.raw)


def _empty_like(x: Any) -> Any:
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        torch: Any = importlib.import_module("torch")
        return torch.empty_like(x)
    import numpy

    return numpy.empty_like(x)
