"""Capability declarations for sweeps (`kernelpilot sweep run|report`, MCP `sweep_run`, `sweep_report`)."""

from kernelpilot.capabilities import Capability
from kernelpilot.sweep.models import SweepReportRequest, SweepReportResult, SweepRunRequest, SweepRunResult

CAPABILITIES = [
    Capability(
        tool="sweep_run",
        command=("sweep", "run"),
        summary="Run every variant x ledger shape of a sweep spec on Dask; record each cell once; resume.",
        description=(
            "A kernel that wins at one shape is not a result: sweep it and its baselines over the production "
            "shapes. The spec (TOML) names variants (factory 'file.py:function' taking the shape's fields as "
            "keyword arguments and returning a launch closure, checked against `reference` within atol/rtol; "
            "or a command template with {field} placeholders whose printed metric is read as `eval` does), "
            "the baseline, a JSONL shape ledger (model, stage, dtype, fields, optional weight), the GPU wiki "
            "id for roofline %, and the timing mode (cold/warm). Cells run as Dask tasks: one worker per "
            "visible GPU by default, --workers N --device cpu, or --scheduler tcp://host:8786 for an "
            "existing cluster. Workers load the modules, torch and the CUDA context once, before the cells; "
            "cells are submitted longest first (roofline floor, else shape size) so the workers finish "
            "together. Each cell is recorded once in the experiment database (child of the sweep record; "
            "the cells that have arrived are written in one transaction); an incorrect cell is never timed; "
            "a re-run skips recorded cells. Returns the per-shape table and, per variant, the weighted "
            "geomean speed-up with its bootstrap CI, wins/parity/losses, the worst shapes and the spec's "
            "stop conditions, and the run's timeline: the cells phase, each worker's busy share (head, "
            "gaps, tail) and per-cell medians of wait, set-up, timing, result hand-off and record write."
        ),
        request=SweepRunRequest,
        result=SweepRunResult,
        target="kernelpilot.sweep.run:run_sweep",
        positional=("spec",),
        read_only=False,
        long_running=True,
        takes_progress=True,
    ),
    Capability(
        tool="sweep_report",
        command=("sweep", "report"),
        summary="Show a recorded sweep: per-shape table, geomean speed-ups, worst shapes; HTML dashboard.",
        description=(
            "Read a sweep and its cells back from the experiment database (ids from `sweep run` or "
            "`exp list --tag sweep`). With --html FILE, write a self-contained dashboard: kernel x shape "
            "heat map, speed-up per shape with CIs, roofline % scatter from cited peaks, worst shapes first."
        ),
        request=SweepReportRequest,
        result=SweepReportResult,
        target="kernelpilot.sweep.report:sweep_report",
        bare={"html": ""},
        positional=("id",),
        read_only=False,
    ),
]
