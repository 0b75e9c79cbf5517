"""The `sweep_run` capability: every missing cell of a sweep as one Dask task, each recorded once on arrival.

Order of work: read and check the spec and ledger (typed errors before anything runs), write the sweep
record (skipped when it exists), look up which cells are already recorded (resume: those are skipped),
submit the rest (baselines first by priority), and record each cell the moment its result arrives, so
an interruption loses at most the cells still running. Cells that crashed are not recorded (a re-run
retries them) and make the run end with `CellFailedError` after every other cell is stored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kernelpilot.experiments.backends import open_store
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.store import Store
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.sweep import records, spec
from kernelpilot.sweep.errors import CellFailedError
from kernelpilot.sweep.models import (
    CellOutcome,
    Shape,
    SweepRunRequest,
    SweepRunResult,
    SweepSummary,
    VariantSpec,
)


@contextmanager
def _store(db: str | None) -> Iterator[Store]:
    store = open_store(db)
    try:
        yield store
    finally:
        store.close()


class _Recorder:
    """Writes cells once, scoring each candidate against its shape's baseline when both are recorded."""

    def __init__(self, store: Store, loaded: spec.LoadedSweep, existing: list[ExperimentRecord]) -> None:
        self.store, self.loaded, self.spec = store, loaded, loaded.spec
        self.baselines: dict[str, ExperimentRecord] = {}
        self.pending: dict[str, list[ExperimentRecord]] = {}
        for rec in existing:
            self._track(rec)
        # a resumed sweep whose baseline landed after a candidate: score it now
        for key, base in list(self.baselines.items()):
            self._score_pending(key, base)

    def _track(self, rec: ExperimentRecord) -> None:
        key = rec.raw_result["shape_key"]
        if rec.raw_result["role"] == "baseline":
            self.baselines[key] = rec
        elif rec.raw_result.get("verdict") == "no_baseline":
            self.pending.setdefault(key, []).append(rec)

    def _score_pending(self, key: str, base: ExperimentRecord) -> None:
        for rec in self.pending.pop(key, []):
            changes = records.scored_changes(rec, base, self.spec)
            if changes is not None:
                self.store.update(rec.id, changes)

    def record(self, rec: ExperimentRecord) -> int:
        key = rec.raw_result["shape_key"]
        base = self.baselines.get(key)
        if rec.raw_result["role"] == "candidate" and base is not None:
            changes = records.scored_changes(rec, base, self.spec)
            if changes is not None:
                rec = ExperimentRecord.model_validate({**rec.model_dump(mode="json"), **changes})
        written = self.store.create([rec], on_conflict="skip")
        if written:
            self._track(rec)
            if rec.raw_result["role"] == "baseline":
                self._score_pending(key, rec)
        return written


def _finish(store: Store, loaded: spec.LoadedSweep) -> SweepSummary:
    sweep, cells = records.load_sweep(store, loaded.sweep_id)
    summary = records.summarize(sweep, cells, store.url)
    result = {
        s.variant: {
            "geomean": s.geomean,
            "geomean_ci": s.geomean_ci,
            "wins": s.wins,
            "parity": s.parity,
            "losses": s.losses,
            "incorrect": s.incorrect,
            "stop_met": s.stop_met,
        }
        for s in summary.summaries
        if s.role == "candidate"
    }
    text = "; ".join(
        f"{v}: geomean {r['geomean']:.3f}x" for v, r in result.items() if r["geomean"] is not None
    )
    store.update(
        sweep.id,
        {
            "raw_result": {**sweep.raw_result, "result": result, "complete": summary.complete},
            "description": {**sweep.description.model_dump(), "result": text},
        },
    )
    return summary


def run_sweep(req: SweepRunRequest, progress: Progress = no_progress) -> SweepRunResult:
    t0 = time.perf_counter()
    loaded = spec.load(req.spec, req.label)
    roof = records.Roofline(loaded.spec)
    sp = loaded.spec
    crashes: list[str] = []
    new = 0
    with _store(req.db) as store:
        sweep_rec = records.sweep_record(loaded, roof.gpu_id)
        if roof.note:
            sweep_rec.raw_result["roofline_note"] = roof.note
        if not store.create([sweep_rec], on_conflict="skip"):
            old = store.get(loaded.sweep_id)
            if old.raw_result.get("shapes") != sweep_rec.raw_result["shapes"]:
                # the ledger changed since the last run: the sweep now covers the current ledger's shapes
                store.update(loaded.sweep_id, {"raw_result": {**old.raw_result, **sweep_rec.raw_result}})
        wanted = {
            records.cell_id(loaded.sweep_id, v, s.key): (v, s) for v in sp.variants for s in loaded.shapes
        }
        existing = store.get_many(list(wanted))
        done_ids = {r.id for r in existing}
        todo = [vs for cid, vs in wanted.items() if cid not in done_ids]
        recorder = _Recorder(store, loaded, existing)
        desc, nworkers = "nothing to run (every cell recorded)", 0
        if todo:
            from kernelpilot.sweep.cluster import open_cluster

            with open_cluster(req.scheduler, req.workers, req.device, req.connect_timeout_s) as cl:
                desc, nworkers = cl.description, cl.workers
                new, crashes = _execute(cl, loaded, roof, todo, recorder, progress, req.device)
        summary = _finish(store, loaded)
    html = None
    if req.html:
        from kernelpilot.sweep.report import write_html

        html = write_html(summary, req.html)
    if crashes:
        raise CellFailedError(
            f"{len(crashes)} cell(s) of sweep {loaded.sweep_id} crashed and were not recorded "
            f"({new} new cell(s) recorded, {len(done_ids)} were already): "
            + "; ".join(crashes[:5])
            + (" ..." if len(crashes) > 5 else ""),
            "fix the named variant (or ledger line) and run the sweep again: recorded cells are skipped",
        )
    return SweepRunResult(
        summary=summary,
        new_cells=new,
        skipped_cells=len(done_ids),
        cluster=desc,
        workers=nworkers,
        wall_s=time.perf_counter() - t0,
        html=html,
    )


def _same_kind(a: VariantSpec, b: VariantSpec) -> bool:
    """Both factory variants or both command variants: the two can be timed paired."""
    return (a.factory is not None) == (b.factory is not None)


def _execute(
    cl: Any,
    loaded: spec.LoadedSweep,
    roof: records.Roofline,
    todo: list[tuple[str, Shape]],
    recorder: _Recorder,
    progress: Progress,
    device: str,
) -> tuple[int, list[str]]:
    """Submit every cell, record each as it completes; returns (cells recorded, crash messages)."""
    import uuid

    from distributed import as_completed

    from kernelpilot.sweep.cell import run_cell

    sp = loaded.spec
    run_tag = uuid.uuid4().hex[:8]
    futures: dict[Any, tuple[str, Shape]] = {}
    for v, s in todo:
        payload = {
            "variant": v,
            "variant_spec": sp.variants[v].model_dump(mode="json"),
            "shape": s.model_dump(mode="json"),
            "root": str(loaded.root),
            "mode": sp.mode,
            "runs": sp.runs,
            "warmup": sp.warmup,
            "cv_threshold": sp.cv_threshold,
            "direction": sp.direction,
            "parity": sp.parity,
            "device": "cpu" if device == "cpu" else cl.device,
            # a candidate cell is timed together with the baseline variant when both are of one kind
            # (factories: compare's engine; commands: alternated runs)
            "baseline_spec": sp.variants[sp.baseline].model_dump(mode="json")
            if v != sp.baseline and _same_kind(sp.variants[v], sp.variants[sp.baseline])
            else None,
        }
        fut = cl.client.submit(
            run_cell,
            payload,
            key=f"{records.cell_id(loaded.sweep_id, v, s.key)}-{run_tag}",
            pure=False,
            priority=1 if v == sp.baseline else 0,
        )
        futures[fut] = (v, s)
    total, done, new = len(todo), 0, 0
    crashes: list[tuple[int, str, str]] = []  # (ledger line, variant, message): reported in ledger order
    progress(0, total, f"{total} cell(s) on {cl.workers} worker(s)")
    for fut in as_completed(list(futures), loop=cl.client.loop):  # type: ignore[no-untyped-call]
        v, s = futures.pop(fut)
        done += 1
        try:
            out = CellOutcome.model_validate(fut.result())
        except Exception as exc:  # KilledWorker (died too often), CancelledError, a lost scheduler
            crashes.append((s.line, v, f"{type(exc).__name__}: {exc}"))
            progress(done, total, f"{v} L{s.line} FAILED")
            continue
        if out.state == "crashed":
            crashes.append((s.line, v, str(out.error)))
            progress(done, total, f"{v} L{s.line} crashed")
            continue
        unit = sp.variants[v].metric_unit if sp.variants[v].command else "us"
        new += recorder.record(records.cell_record(loaded, out, s, roof, unit))
        progress(done, total, f"{v} L{s.line} {out.state}")
    # cells complete in any order; the message names them in ledger order so a re-run reads the same
    return new, [f"variant {v!r} at ledger line {line}: {msg}" for line, v, msg in sorted(crashes)]
