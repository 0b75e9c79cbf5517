"""The `sweep_run` capability: every missing cell of a sweep as one Dask task, each recorded once on arrival.

Order of work: read and check the spec and ledger (typed errors before anything runs), write the sweep
record (skipped when it exists), look up which cells are already recorded (resume: those are skipped),
warm every worker (modules, torch, CUDA: `cell.warm_worker`), submit the rest at once, longest first
(`sweep.order`), and record the cells as their results arrive (all those arrived so far in one
transaction), so an interruption loses at most the cells still running. The run's timeline
(`sweep.timeline`) says where the cells phase went. Cells that crashed are not recorded (a re-run
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
from kernelpilot.sweep import order, records, spec, timeline
from kernelpilot.sweep.errors import CellFailedError
from kernelpilot.sweep.models import (
    CellOutcome,
    RunTimeline,
    Shape,
    SweepRunRequest,
    SweepRunResult,
    SweepSummary,
    VariantSpec,
)
from kernelpilot.sweep.timeline import CellTrace


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

    def _scored(self, rec: ExperimentRecord, batch: dict[str, ExperimentRecord]) -> ExperimentRecord:
        """An unpaired candidate scored against its shape's baseline when that is recorded (or in `batch`)."""
        key = rec.raw_result["shape_key"]
        base = self.baselines.get(key) or batch.get(key)
        if rec.raw_result["role"] == "candidate" and base is not None:
            changes = records.scored_changes(rec, base, self.spec)
            if changes is not None:
                return ExperimentRecord.model_validate({**rec.model_dump(mode="json"), **changes})
        return rec

    def record_many(self, recs: list[ExperimentRecord]) -> int:
        """Cells written in one transaction; a candidate beside its baseline in the batch is scored at once.
        When some were recorded already (another run of the same sweep), the stored records are tracked."""
        batch = {r.raw_result["shape_key"]: r for r in recs if r.raw_result["role"] == "baseline"}
        ready = [self._scored(r, batch) for r in recs]
        written = self.store.create(ready, on_conflict="skip")
        tracked = ready if written == len(ready) else self.store.get_many([r.id for r in ready])
        for rec in sorted(tracked, key=lambda r: r.raw_result["role"] == "baseline"):
            self._track(rec)
            if rec.raw_result["role"] == "baseline":
                self._score_pending(rec.raw_result["shape_key"], rec)
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
    if req.html:  # the dashboard path held to foundation.atomic's policy before any cell runs
        from kernelpilot.foundation.atomic import output_path

        output_path(req.html, "--html", mkdir=req.mkdir)
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
        desc, nworkers, timeline_ = "nothing to run (every cell recorded)", 0, None
        if todo:
            from kernelpilot.sweep.cluster import open_cluster

            with open_cluster(req.scheduler, req.workers, req.device, req.connect_timeout_s) as cl:
                desc, nworkers = cl.description, cl.workers
                new, crashes, timeline_ = _execute(cl, loaded, roof, todo, recorder, progress, req.device)
        summary = _finish(store, loaded)
    html = None
    if req.html:
        from kernelpilot.sweep.report import write_html

        html = write_html(summary, req.html, req.mkdir)
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
        timeline=timeline_,
    )


def _same_kind(a: VariantSpec, b: VariantSpec) -> bool:
    """Both factory variants or both command variants: the two can be timed paired."""
    return (a.factory is not None) == (b.factory is not None)


def _payload(loaded: spec.LoadedSweep, v: str, s: Shape, device: str) -> dict[str, Any]:
    sp = loaded.spec
    return {
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
        "device": device,
        # a candidate cell is timed together with the baseline variant when both are of one kind
        # (factories: compare's engine; commands: alternated runs)
        "baseline_spec": sp.variants[sp.baseline].model_dump(mode="json")
        if v != sp.baseline and _same_kind(sp.variants[v], sp.variants[sp.baseline])
        else None,
    }


def _warm(cl: Any, loaded: spec.LoadedSweep, device: str) -> tuple[float, list[str]]:
    """Every worker loads the factory modules and (for factories on a GPU) torch and its CUDA context at
    once, before the cells phase, so no cell pays them (`cell.warm_worker`); returns (seconds, notes)."""
    from kernelpilot.sweep.cell import warm_worker

    targets = sorted(
        {t for v in loaded.spec.variants.values() for t in (v.factory, v.reference) if t is not None}
    )
    # torch only where the cells time on a GPU (their payload's device is the cluster's unless --device cpu)
    gpu = device != "cpu" and cl.device == "gpu"
    payload = {"root": str(loaded.root), "targets": targets, "torch": bool(targets) and gpu}
    t0 = time.perf_counter()
    try:
        answers = cl.client.run(warm_worker, payload)
    except Exception as exc:  # a worker lost during the warm-up: the cells still run (and warm themselves)
        return time.perf_counter() - t0, [f"worker warm-up failed: {type(exc).__name__}: {exc}"]
    notes = sorted({a["note"] for a in answers.values() if isinstance(a, dict) and a.get("note")})
    return time.perf_counter() - t0, [f"warm-up: {n}" for n in notes]


def _submit(
    cl: Any, loaded: spec.LoadedSweep, ordered: list[tuple[str, Shape]], device: str
) -> dict[Any, tuple[str, Shape, CellTrace]]:
    """Every cell submitted up front, longest first (Dask runs higher priorities first): the scheduler
    hands each free worker the next cell, with no round trip through the driver."""
    import uuid

    from kernelpilot.sweep.cell import run_cell

    run_tag = uuid.uuid4().hex[:8]
    futures: dict[Any, tuple[str, Shape, CellTrace]] = {}
    extra = {"resources": cl.resources} if cl.resources else {}
    for rank, (v, s) in enumerate(ordered):
        trace = CellTrace(submitted=time.time())
        fut = cl.client.submit(
            run_cell,
            _payload(loaded, v, s, device),
            key=f"{records.cell_id(loaded.sweep_id, v, s.key)}-{run_tag}",
            pure=False,
            priority=len(ordered) - rank,
            **extra,
        )
        futures[fut] = (v, s, trace)
    return futures


class _Progress:
    """Counts cells as they arrive and collects the crashes (reported in ledger order at the end)."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0
        self.crashes: list[tuple[int, str, str]] = []  # (ledger line, variant, message)

    def arrived(self, v: str, s: Shape, state: str, error: str | None = None) -> None:
        self.done += 1
        if error is not None:
            self.crashes.append((s.line, v, error))
        self.progress(self.done, self.total, f"{v} L{s.line} {state}")


def _record_batch(
    batch: list[Any],
    futures: dict[Any, tuple[str, Shape, CellTrace]],
    loaded: spec.LoadedSweep,
    roof: records.Roofline,
    recorder: _Recorder,
    seen: _Progress,
) -> tuple[int, int]:
    """Every cell of one batch of arrived (future, result) pairs written in one store transaction;
    returns (cells written, records offered to the store)."""
    sp = loaded.spec
    arrived, recs, traces = time.time(), [], []
    for fut, result in batch:
        v, s, trace = futures[fut]
        trace.arrived = arrived
        # the task's exception (KilledWorker: died too often), a CancelledError, a lost scheduler
        exc = result[1] if fut.status == "error" else result if isinstance(result, BaseException) else None
        if exc is not None:
            seen.arrived(v, s, "FAILED", f"{type(exc).__name__}: {exc}")
            continue
        out = CellOutcome.model_validate(result)
        trace.outcome = out
        if out.state == "crashed":
            seen.arrived(v, s, "crashed", str(out.error))
            continue
        unit = sp.variants[v].metric_unit if sp.variants[v].command else "us"
        recs.append(records.cell_record(loaded, out, s, roof, unit))
        traces.append(trace)
        seen.arrived(v, s, out.state)
    if not recs:
        return 0, 0
    written = recorder.record_many(recs)
    now = time.time()
    for trace in traces:
        trace.recorded = now
    return written, len(recs)


def _execute(
    cl: Any,
    loaded: spec.LoadedSweep,
    roof: records.Roofline,
    todo: list[tuple[str, Shape]],
    recorder: _Recorder,
    progress: Progress,
    device: str,
) -> tuple[int, list[str], RunTimeline]:
    """Warm the workers, submit every cell, record the cells in batches as they complete; returns (cells
    recorded, crash messages, the run's timeline)."""
    from distributed import as_completed

    warm_s, notes = _warm(cl, loaded, device)
    ordered, how = order.longest_first(todo, loaded.spec, roof)
    start = time.time()
    futures = _submit(cl, loaded, ordered, "cpu" if device == "cpu" else cl.device)
    traces = [t for _v, _s, t in futures.values()]
    seen = _Progress(progress, len(todo))
    progress(0, len(todo), f"{len(todo)} cell(s) on {cl.workers} worker(s)")
    new = batches = 0
    # every cell that has arrived is written in one transaction before waiting again: an interruption
    # still loses only the cells that had not arrived
    # results come with their futures (fetched as each completes, not one round trip per cell afterwards)
    ac = as_completed(list(futures), loop=cl.client.loop, with_results=True, raise_errors=False)  # type: ignore[no-untyped-call]
    for batch in ac.batches():  # type: ignore[no-untyped-call]
        written, offered = _record_batch(batch, futures, loaded, roof, recorder, seen)
        new += written
        batches += offered > 0
    timeline_ = timeline.build(
        traces, start=start, end=time.time(), warm_s=warm_s, order=how, batches=batches,
        notes=[*cl.notes, *notes],
    )  # fmt: skip
    # cells complete in any order; the message names them in ledger order so a re-run reads the same
    crashes = [f"variant {v!r} at ledger line {line}: {msg}" for line, v, msg in sorted(seen.crashes)]
    return new, crashes, timeline_
