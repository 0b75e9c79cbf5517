"""The `sweep_report` capability: a recorded sweep read back from the experiment database, as text or as
a self-contained HTML dashboard rendered from `templates/sweep_report.html.j2` (inline SVG, no scripts).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kernelpilot.experiments.backends import store_session
from kernelpilot.foundation.atomic import output_path, write_text_atomic
from kernelpilot.sweep import charts, records
from kernelpilot.sweep.models import SweepReportRequest, SweepReportResult, SweepSummary


def write_html(summary: SweepSummary, out: str, mkdir: bool = False) -> str:
    """Render the dashboard to `out` (atomically, under `foundation.atomic.output_path`'s policy: `mkdir`
    makes a missing folder); returns the path written."""
    from kernelpilot.workspace.render import render_template

    base = {c.shape_key: c for c in summary.cells if c.variant == summary.baseline}
    worst: dict[str, float] = {}
    for c in summary.cells:
        if c.speedup is not None:
            worst[c.shape_key] = min(worst.get(c.shape_key, c.speedup), c.speedup)
    shape_rows: dict[str, tuple[int, str]] = {c.shape_key: (c.line, c.label) for c in summary.cells}
    # worst shapes first: lowest speed-up of any candidate, unscored shapes last, then ledger order
    order = sorted(shape_rows, key=lambda k: (worst.get(k, float("inf")), shape_rows[k][0]))
    shapes = [(k, shape_rows[k][0], shape_rows[k][1]) for k in order]
    by = {(c.variant, c.shape_key): c for c in summary.cells}
    table = [
        {
            "key": k,
            "line": line,
            "label": label,
            "base": base.get(k),
            "cells": [by.get((v, k)) for v in summary.variants],
        }
        for k, line, label in shapes
    ]
    candidates = [s for s in summary.summaries if s.role == "candidate"]
    html = render_template(
        "sweep_report.html.j2",
        s=summary,
        table=table,
        candidates=candidates,
        heatmap_svg=charts.heatmap_svg(summary.variants, shapes, summary.cells),
        bars=[
            charts.speedup_bars_svg(
                v.variant,
                sorted(
                    [c for c in summary.cells if c.variant == v.variant],
                    key=lambda c: (c.speedup if c.speedup is not None else float("inf"), c.line),
                ),
            )
            for v in candidates
        ],
        roofline_svg=charts.roofline_scatter_svg(summary.variants, summary.cells),
        generated=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    path = Path(out).expanduser()
    write_text_atomic(path, html, arg="--html", mkdir=mkdir)
    return str(path)


def sweep_report(req: SweepReportRequest) -> SweepReportResult:
    wanted = req.html not in (None, False) or req.out is not None
    named = (req.html if isinstance(req.html, str) and req.html else req.out) or f"{req.id}.html"
    if wanted:  # the dashboard path held to foundation.atomic's policy before the store is opened
        output_path(named, "--html", mkdir=req.mkdir)
    with store_session(req.db) as store:  # a store this failed call created is removed again (issue 41)
        sweep, cells = records.load_sweep(store, req.id)
        summary = records.summarize(sweep, cells, store.url, store.skipped)
    html = write_html(summary, named, req.mkdir) if wanted else None
    return SweepReportResult(summary=summary, html=html)
