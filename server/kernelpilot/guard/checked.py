"""A contract task's semantic checks and its paired timing in one process, which eval then judges.

Why one process: a second one costs a Python start-up, the imports and, on a GPU, torch's import and a CUDA
context: by the estimate made on the H100, most of the guard's cost on a ~50 us kernel, and on the dev
machine most of the harness process's wall time (docs/guard.md, "Cost"), while the checks themselves take
milliseconds once the imports are done. What the separate harness process guaranteed still holds:

- the checks run first, at the top of the process, as `guard.harness` runs them in its own: under a
  `Watch` started before the candidate's module loads, with no timing code on the stack (a candidate that
  looks for `kernelpilot.timing` frames sees what it saw in the harness process); their report is written
  to the file eval names before anything is timed, and a rejected candidate is never timed;
- then every module the checks imported from the candidate's tree is set aside (`timing.compare.set_aside`),
  the working directory and the environment restored and the GPU's cached memory handed back, so
  `kernelpilot compare` imports the candidate afresh, as a new process would; the same `Watch` goes on
  through the timing (`timing.compare.time_compare(watch=)`), so nothing the candidate does between the
  two goes unwatched;
- eval, another process, judges the report and the timing (`tasks.evaluate`, `guard.steps`).

`python -m kernelpilot.guard.checked CONTRACT_JSON WORKDIR REPORT_JSON REQUEST_JSON [RESULT_JSON]`: writes
the `HarnessReport` (or `{"error": ...}`) to REPORT_JSON; when it passed, times the `CompareRequest` and
writes its result to RESULT_JSON (else prints it) as `kernelpilot --json compare` does
(`timing.compare_process.run_request`): a file, because the candidate runs here and may print.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.guard.harness import run_checks, with_seen
from kernelpilot.guard.models import Contract, HarnessReport
from kernelpilot.guard.observe import Watch
from kernelpilot.timing.compare import set_aside
from kernelpilot.timing.compare_process import run_request
from kernelpilot.timing.models import CompareRequest

USAGE = (
    "usage: python -m kernelpilot.guard.checked CONTRACT_JSON WORKDIR REPORT_JSON REQUEST_JSON [RESULT_JSON]"
)


def checks(contract: Contract, workdir: Path, watch: Watch) -> HarnessReport:
    """`harness.run_checks` under `watch` (started before the candidate's first import, and left running
    for the timing: one watch, no gap between the checks and the timing for a finalizer or a signal
    handler to replace a timer in), then what they imported from the workdir set aside, the working
    directory and the environment as they were (the timing's factory reads KERNELPILOT_GUARD_TASK from it)
    and the GPU's cached memory freed, so the timing starts as it would in a fresh process."""
    before, cwd, env = set(sys.modules), os.getcwd(), dict(os.environ)
    try:
        report = run_checks(contract, workdir)
    finally:
        set_aside(before, workdir.resolve(), "guard_checks")
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        _release_device_memory()
    return with_seen(report, watch.seen())


def _release_device_memory() -> None:
    """The caching allocator's blocks back to the driver (the checks' poisoned scribbles among them)."""
    gc.collect()
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        cuda.synchronize()
        cuda.empty_cache()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (4, 5):
        print(USAGE, file=sys.stderr)
        return 2
    report_path = Path(args[2])
    watch = Watch()  # before the candidate's first import; its timing goes on with it
    try:
        return _checked_timing(args, report_path, watch)
    finally:
        watch.findings()  # ends it (the timing's observation may have): nothing of the candidate runs after


def _checked_timing(args: list[str], report_path: Path, watch: Watch) -> int:
    try:
        contract = Contract.model_validate_json(Path(args[0]).read_text(encoding="utf-8"))
        request = CompareRequest.model_validate_json(Path(args[3]).read_text(encoding="utf-8"))
        report = checks(contract, Path(args[1]), watch)
    except KernelpilotError as exc:
        report_path.write_text(json.dumps({"error": exc.to_dict()}), encoding="utf-8")
        return 1
    report_path.write_text(report.model_dump_json(), encoding="utf-8")
    if report.rejection is not None or report.error:
        return 0  # eval reads the report: a rejected (or failed) candidate is never timed
    return run_request(request, watch, Path(args[4]) if len(args) == 5 else None)


if __name__ == "__main__":
    raise SystemExit(main())
