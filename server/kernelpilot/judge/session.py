"""One run of the judge: runners started, the checked side checked, both sides timed, the report built.

Order: the runners start first (their interpreters and imports overlap the judge's); the judge loads the
contract (refusing the agent's files) before any candidate code runs; then each runner imports its side's
candidate function and is stopped; the judge runs the semantic checks on the checked side, then the timed
batches (`clock`); every runner and every process they started is killed before the report is written. A
runner that raises on import or on the timed shape is `correctness_failed`; one that exits, crashes or
breaks the protocol is `failed`, one that misses a deadline `timeout`, each with the runner's last lines.
"""

from __future__ import annotations

import time
from pathlib import Path

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.judge.checks import CandidateRaised, Checker
from kernelpilot.judge.clock import Clock
from kernelpilot.judge.contract import JudgeContract, refuse_agent_files
from kernelpilot.judge.models import JudgeReport, JudgeRequest
from kernelpilot.judge.procs import RunnerExit, Side, become_subreaper
from kernelpilot.runner import sandbox


class _Phases:
    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.t, 4)
        self.t = now


def _start(req: JudgeRequest) -> list[Side]:
    """The runners, started first; a contract written with torch has them import it meanwhile (torch's
    import is most of a runner's start-up, and no candidate code runs before the contract is loaded)."""
    module = Path(req.contract_root) / req.contract.module
    try:
        uses_torch = "torch" in module.read_text(encoding="utf-8", errors="replace")
    except OSError:  # the contract's load reports it
        uses_torch = False
    preload = ("torch",) if uses_torch else ()
    return [Side(spec.name, req.env, req.timeout_s, preload) for spec in req.sides]


def _setup(req: JudgeRequest, sides: list[Side], report: JudgeReport) -> None:
    for side, spec in zip(sides, req.sides, strict=True):
        got = side.ask(
            {"op": "setup", "root": spec.root, "candidate": req.contract.candidate, "out": req.contract.out,
             "in_place": req.contract.in_place},
            timeout_s=req.timeout_s,
        )  # fmt: skip
        if not got.get("ok"):
            raise CandidateRaised(
                f"the {side.name}'s module failed to load: {got.get('error')}\n{got.get('trace', '')}"
            )
        side.sandbox = str(got.get("sandbox", ""))
        report.notes.append(f"{side.name} runner (pid {got.get('pid')}): {side.sandbox}")
        side.stop()


def _judge(req: JudgeRequest, sides: list[Side], report: JudgeReport, phases: _Phases) -> None:
    # The contract first: no candidate code has run anywhere yet (the runners are still starting), so none
    # can have rewritten the contract's module before the judge reads it.
    jc = JudgeContract(req.contract, Path(req.contract_root))
    phases.mark("contract_load_s")
    _setup(req, sides, report)
    phases.mark("runners_start_s")
    if jc.device != "cpu":
        raise KernelpilotError(
            f"the isolated judge runs CPU contracts only so far; this contract resolves to {jc.device}",
            "set the contract's device to cpu, or use a release whose isolated judge has a GPU arena",
        )
    checkers = {s.name: Checker(jc, s) for s in sides}
    checked = checkers[req.checked]
    report.side = req.checked
    rejection = checked.all_shapes()
    report.calls = checked.calls
    prep = checked.prepared
    report.dtype = jc.dtype
    if prep is not None:
        report.backend = f"{prep.lib}:cpu"
        report.tolerance, report.tolerance_source = prep.tol, prep.tol_source
    phases.mark("checks_s")
    if rejection is not None:
        report.status, report.rejection = "rejected", rejection
        return
    assert prep is not None
    timed = Clock(jc, sides, checkers, prep, req.timing_mode).run(req.pairs, req.warmup)
    report.timing, report.ratios = timed.timing, timed.ratios
    phases.mark("timing_s")
    phases.seconds["fresh_values_s"] = round(timed.seconds_fresh, 4)
    phases.seconds["timed_checks_s"] = round(timed.seconds_checks, 4)
    if timed.rejection is not None:
        report.status, report.rejection, report.side = "rejected", timed.rejection, timed.rejected_side
        return
    report.status, report.side = "passed", ""


def run(req: JudgeRequest) -> JudgeReport:
    """The whole judged run; never raises for what a candidate does."""
    phases = _Phases()
    become_subreaper()
    sandbox.not_dumpable()
    refuse_agent_files([Path(s.root) for s in req.sides] + [Path(req.contract_root)], req.allowed_files)
    report = JudgeReport(status="failed")
    sides: list[Side] = []
    try:
        sides = _start(req)
        _judge(req, sides, report, phases)
    except RunnerExit as exc:
        report.status, report.error = exc.status, exc.message  # type: ignore[assignment]
        report.side = next((s.name for s in sides if s.name in exc.message), report.side)
    except CandidateRaised as exc:
        report.status, report.error = "correctness_failed", str(exc)
    except KernelpilotError as exc:
        report.status, report.error = "failed", f"{exc.message} (fix: {exc.hint})"
    finally:
        for side in sides:
            side.close()
        phases.mark("teardown_s")
        report.phases_s = phases.seconds
    return report
