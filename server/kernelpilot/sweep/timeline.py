"""Where a sweep run's cells phase went: per worker busy share and per cell medians of each step.

Why: a sweep on N GPUs should take 1/N of the time on one; when it does not, the loss is in one of
worker start-up (the head), dispatch between cells (gaps), cells that set up more than they time, the
hand-off of results and records to the driver, or a long last cell (the tail). The worker reports its
cell's phases (`models.CellPhases`, its own clock); the driver adds when it submitted, received and
recorded each cell. Worker and driver clocks are compared only for head, tail and wait, which are exact on
a local cluster and off by the hosts' clock skew on a remote one.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from kernelpilot.sweep.models import CellOutcome, RunTimeline, WorkerShare


@dataclass
class CellTrace:
    """One cell seen from the driver (unix times); `outcome` is None when its future failed."""

    submitted: float
    arrived: float = 0.0
    recorded: float = 0.0
    outcome: CellOutcome | None = None


def _label(out: CellOutcome) -> str:
    gpu = f"GPU {out.visible_devices}, " if out.visible_devices else ""
    return f"{gpu}pid {out.worker_pid}" + (f" on {out.worker_host}" if out.worker_host else "")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _worker_rows(
    by_worker: dict[str, list[CellTrace]], start: float, end: float
) -> tuple[list[WorkerShare], list[float]]:
    """Per worker shares, and every cell's overhead (time it held its worker minus its timing)."""
    span = max(end - start, 1e-9)
    rows: list[WorkerShare] = []
    overheads: list[float] = []
    for label, traces in sorted(by_worker.items()):
        cells = sorted(
            (t.outcome for t in traces if t.outcome is not None), key=lambda o: o.phases.started_unix
        )
        busy = sum(max(c.phases.ended_unix - c.phases.started_unix, 0.0) for c in cells)
        gaps = 0.0
        prev_end: float | None = None
        for c in cells:
            ph = c.phases
            if prev_end is not None:
                gaps += max(ph.started_unix - prev_end, 0.0)
            held = ph.ended_unix - (ph.started_unix if prev_end is None else prev_end)
            overheads.append(max(held - ph.timing_s, 0.0))
            prev_end = ph.ended_unix
        rows.append(
            WorkerShare(
                worker=label,
                cells=len(cells),
                busy_s=busy,
                busy_share=busy / span,
                head_s=max(cells[0].phases.started_unix - start, 0.0) if cells else span,
                gaps_s=gaps,
                tail_s=max(end - (prev_end or start), 0.0),
            )
        )
    return rows, overheads


def build(
    traces: list[CellTrace],
    *,
    start: float,
    end: float,
    warm_s: float,
    order: str,
    batches: int,
    notes: list[str] | None = None,
) -> RunTimeline:
    """The run's timeline from its cells' traces; `start`/`end` bound the cells phase (driver clock)."""
    done = [t for t in traces if t.outcome is not None]
    by_worker: dict[str, list[CellTrace]] = {}
    for t in done:
        assert t.outcome is not None
        by_worker.setdefault(t.outcome.worker or _label(t.outcome), []).append(t)
    # a worker's address is unique but unreadable: show GPU and pid, keyed by the address
    labels = {w: _label(ts[0].outcome) for w, ts in by_worker.items() if ts[0].outcome is not None}
    if len(set(labels.values())) == len(labels):
        by_worker = {labels[w]: ts for w, ts in by_worker.items()}
    rows, overheads = _worker_rows(by_worker, start, end)
    phases = [t.outcome.phases for t in done if t.outcome is not None]
    return RunTimeline(
        cells_phase_s=end - start,
        warm_s=warm_s,
        busy_share=statistics.fmean([r.busy_share for r in rows]) if rows else 0.0,
        workers=rows,
        order=order,
        median_wait_s=_median(
            [max(p.started_unix - t.submitted, 0.0) for t, p in zip(done, phases, strict=True)]
        ),
        median_setup_s=_median([p.load_s + p.build_s + p.check_s for p in phases]),
        median_load_s=_median([p.load_s for p in phases]),
        median_build_s=_median([p.build_s for p in phases]),
        median_check_s=_median([p.check_s for p in phases]),
        median_timing_s=_median([p.timing_s for p in phases]),
        median_result_s=_median(
            [max(t.arrived - p.ended_unix, 0.0) for t, p in zip(done, phases, strict=True)]
        ),
        median_record_s=_median([max(t.recorded - t.arrived, 0.0) for t in done if t.recorded]),
        median_overhead_s=_median(overheads) if overheads else None,
        record_batches=batches,
        notes=list(notes or []),
    )
