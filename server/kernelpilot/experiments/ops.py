"""Core functions behind the `exp_*` tools: each opens the store, does one thing, closes it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpilot.experiments import similarity
from kernelpilot.experiments.api import (
    ExpCreateRequest,
    ExpExportRequest,
    ExpFailuresRequest,
    ExpGetRequest,
    ExpImportRequest,
    ExpIngestRequest,
    ExpLineageRequest,
    ExpListRequest,
    ExportResult,
    ExpSimilarRequest,
    ExpTopRequest,
    ExpUpdateRequest,
    ExpUpgradeRequest,
    FailuresResult,
    ImportResult,
    IngestResult,
    LineageResult,
    RecordListResult,
    RecordResult,
    SimilarMatch,
    SimilarResult,
    TopResult,
    UpgradeResult,
    _Filters,
)
from kernelpilot.experiments.backends import open_store, store_session
from kernelpilot.experiments.record import FAILURE_STATUSES, ExperimentRecord, Status
from kernelpilot.experiments.store import RecordFilter, default_location, is_pg_url, record_error
from kernelpilot.foundation import readers
from kernelpilot.foundation.atomic import output_path, write_text_atomic
from kernelpilot.foundation.errors import FormatError, InputFileError, InvalidArgumentError, NotFoundError

ANALYZE_AFTER = 1000  # records: an import this large refreshes the planner statistics


def upgrade(req: ExpUpgradeRequest) -> UpgradeResult:
    """The one place an older store is migrated: `SQLiteStore(upgrade=True)` copies it beside itself first.

    A SQLite path with no file is refused rather than created: there is nothing to upgrade, and a typo
    must not leave a new empty store behind."""
    location = req.db or default_location()
    if not is_pg_url(location) and not os.path.lexists(Path(location).expanduser()):
        raise NotFoundError(f"no experiment store at {location}", "check --db (or KERNELPILOT_DB)")
    store = open_store(location, upgrade=True)
    try:
        backup = getattr(store, "backup", None)  # SQLite only; PostgreSQL migrates on the server
        return UpgradeResult(
            db=store.url,
            from_version=getattr(store, "upgraded_from", None),
            to_version=store.schema_version(),
            backup=str(backup) if backup else None,
        )
    finally:
        store.close()


def parse_time(value: str | None, name: str) -> datetime | None:
    """An ISO date or time from the command line; naive means UTC."""
    if value is None:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        try:
            d = date.fromisoformat(text)
        except ValueError as exc:
            raise InvalidArgumentError(
                f"--{name.replace('_', '-')}: {value!r} is not an ISO-8601 date or time", "e.g. 2026-11-01"
            ) from exc
        ts = datetime(d.year, d.month, d.day)
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _filter(req: _Filters, **extra: Any) -> RecordFilter:
    try:
        return RecordFilter(
            operator=req.operator,
            dtype=req.dtype,
            gpu=req.gpu,
            arch=req.arch,
            tag=req.tag,
            since=parse_time(req.since, "since"),
            until=parse_time(req.until, "until"),
            text=req.text,
            **extra,
        )
    except ValidationError as exc:
        raise record_error(exc, "filter") from exc


def _validate(data: dict[str, Any], where: str) -> ExperimentRecord:
    try:
        return ExperimentRecord.model_validate(data)
    except ValidationError as exc:
        raise record_error(exc, where) from exc


def create(req: ExpCreateRequest) -> RecordResult:
    data: dict[str, Any] = {
        "parent_id": req.parent_id,
        "operator": req.operator,
        "dtype": req.dtype,
        "shapes": req.shapes,
        "gpu": req.gpu,
        "arch": req.arch,
        "base_commit": req.base_commit,
        "diff_hash": req.diff_hash,
        "summary": req.summary,
        "description": {
            "approach": req.approach,
            "result": req.result,
            "why": req.why,
            "insight": req.insight,
        },
        "raw_result": req.raw_result,
        "score": req.score,
        "status": req.status,
        "is_buggy": req.is_buggy,
        "error_message": req.error_message,
        "tags": req.tags,
    }
    if req.id is not None:
        data["id"] = req.id
    if req.created is not None:
        data["created"] = parse_time(req.created, "created")
    for name in ("environment", "profiling", "links"):
        value = getattr(req, name)
        if value is not None:
            data[name] = value
    rec = _validate(data, "create")
    with store_session(req.db) as store:
        store.create([rec])
        return RecordResult(db=store.url, action="created", record=rec)


def update(req: ExpUpdateRequest) -> RecordResult:
    with store_session(req.db) as store:
        current = store.get(req.id)
        changes: dict[str, Any] = dict(req.set)
        for name in ("status", "score", "summary", "is_buggy", "error_message"):
            value = getattr(req, name)
            if value is not None:
                changes[name] = value
        desc = {
            n: getattr(req, n)
            for n in ("approach", "result", "why", "insight")
            if getattr(req, n) is not None
        }
        if desc:
            base = changes.get("description", current.description.model_dump())
            if not isinstance(base, dict):
                raise InvalidArgumentError("--set: description must be an object", "give {'why': ...}")
            changes["description"] = {**base, **desc}
        if req.add_tag or req.remove_tag:
            tags = list(changes.get("tags", current.tags))
            tags += [t for t in req.add_tag if t not in tags]
            changes["tags"] = [t for t in tags if t not in req.remove_tag]
        if not changes:
            raise InvalidArgumentError("nothing to update", "give at least one field, e.g. --status or --why")
        rec = store.update(req.id, changes)
        return RecordResult(db=store.url, action="updated", record=rec)


def get(req: ExpGetRequest) -> RecordResult:
    with store_session(req.db) as store:
        return RecordResult(db=store.url, action="found", record=store.get(req.id))


def list_records(req: ExpListRequest) -> RecordListResult:
    flt = _filter(req, status=req.status, parent_id=req.parent_id, buggy=req.buggy)
    with store_session(req.db) as store:
        recs = store.query(flt, limit=req.limit, offset=req.offset, order=req.order)
        total = store.count(flt) if (len(recs) == req.limit or req.offset) else req.offset + len(recs)
        return RecordListResult(
            db=store.url, total=total, offset=req.offset, records=recs, unreadable=store.skipped
        )


def top(req: ExpTopRequest) -> TopResult:
    flt = _filter(req, status=req.status)
    with store_session(req.db) as store:
        recs = store.top(flt, req.limit, per_operator=req.per_operator)
        return TopResult(db=store.url, per_operator=req.per_operator, records=recs, unreadable=store.skipped)


def similar(req: ExpSimilarRequest) -> SimilarResult:
    if not (req.operator or req.dtype or req.arch or req.gpu or req.change):
        raise InvalidArgumentError(
            "similar needs something to compare: --operator, --dtype, --arch, --gpu or --change",
            "e.g. --operator gemm --arch sm_90 --change 'unroll k loop by 4'",
        )
    tokens = sorted(similarity.change_tokens(req.change))[:32]
    with store_session(req.db) as store:
        pool = store.similar_candidates(
            req.operator or None, req.dtype or None, req.arch or None, tokens, 2000
        )
        matches: list[SimilarMatch] = []
        for rec in pool:
            if (
                req.failures_only
                and rec.status not in (*FAILURE_STATUSES, Status.neutral)
                and not rec.is_buggy
            ):
                continue
            sim, comps = similarity.score(rec, req.operator, req.dtype, req.arch, req.gpu, req.change)
            if sim >= req.min_similarity:
                matches.append(SimilarMatch(similarity=sim, components=comps.model_dump(), record=rec))
        matches.sort(key=lambda m: (-m.similarity, -m.record.created.timestamp(), m.record.id))
        return SimilarResult(
            db=store.url, candidates=len(pool), matches=matches[: req.limit], unreadable=store.skipped
        )


def lineage(req: ExpLineageRequest) -> LineageResult:
    with store_session(req.db) as store:
        rec = store.get(req.id)
        return LineageResult(
            db=store.url,
            record=rec,
            ancestors=store.ancestors(req.id),
            descendants=store.descendants(req.id, req.max_nodes),
            unreadable=store.skipped,
        )


def failures(req: ExpFailuresRequest) -> FailuresResult:
    statuses = list(FAILURE_STATUSES) + ([Status.neutral] if req.include_neutral else [])
    flt = _filter(req, status=statuses)
    with store_session(req.db) as store:
        recs = store.query(flt, limit=req.limit)
        total = store.count(flt) if len(recs) == req.limit else len(recs)
        return FailuresResult(db=store.url, total=total, records=recs, unreadable=store.skipped)


def read_jsonl_records(path: Path) -> list[ExperimentRecord]:
    """Every record of a JSONL file, validated; errors name the line and the field."""
    out: list[ExperimentRecord] = []
    text = readers.read_text(path, "JSONL file")
    for n, data in readers.iter_jsonl(text, str(path), hint="export with kernelpilot exp export"):
        if not isinstance(data, dict):
            raise FormatError(f"{path}:{n}: a record must be a JSON object", "one record per line")
        out.append(_validate(data, f"{path}:{n}"))
    return out


def import_records(req: ExpImportRequest) -> ImportResult:
    path = Path(req.path)
    records = read_jsonl_records(path)
    with store_session(req.db) as store:
        written = store.create(records, on_conflict=req.on_conflict)
        if written >= ANALYZE_AFTER:
            store.analyze()
        return ImportResult(
            db=store.url, path=req.path, read=len(records), imported=written, skipped=len(records) - written
        )


def export_line(rec: ExperimentRecord) -> str:
    """The record's own JSON (field order of the model, dict keys as stored): what import reads back."""
    return rec.model_dump_json()


def atomic_write_lines(path: Path, lines: Iterator[str]) -> int:
    """Write lines to a temp file beside `path`, then rename over it (`foundation.atomic`'s output-path
    policy: a FIFO, device or missing folder is refused); returns the line count."""
    count = 0

    def counted() -> Iterator[str]:
        nonlocal count
        for line in lines:
            count += 1
            yield line + "\n"

    write_text_atomic(path, counted(), arg="--out")
    return count


def export_records(req: ExpExportRequest) -> ExportResult:
    flt = _filter(req)
    output_path(req.out, "--out")  # refused before the store is read
    with store_session(req.db) as store:
        if flt == RecordFilter():
            lines = (export_line(r) for r in store.iter_all())
        else:
            total = store.count(flt)
            lines = (export_line(r) for r in store.query(flt, limit=max(total, 1), order="oldest"))
        count = atomic_write_lines(Path(req.out), lines)
        return ExportResult(db=store.url, path=req.out, count=count, unreadable=store.skipped)


def ingest(req: ExpIngestRequest) -> IngestResult:
    from kernelpilot.experiments.ingest import record_from_eval

    path = Path(req.path)
    root = Path(req.workspace) if req.workspace else Path.cwd()
    text = readers.read_text(path, "eval result or ledger")  # first: a link loop or device is refused here
    try:
        rel = os.path.relpath(path.resolve(), root.resolve())
    except (ValueError, RuntimeError, OSError):  # another drive; a loop in the workspace path
        rel = str(path)
    items: list[tuple[Any, str, str]] = []  # (object, where, link)
    is_ledger = path.suffix == ".jsonl" or req.line is not None
    if is_ledger:
        lines = text.split("\n")  # not splitlines(): U+2028 & co. may sit inside JSON strings
        wanted = [req.line] if req.line is not None else [i + 1 for i, ln in enumerate(lines) if ln.strip()]
        for n in wanted:
            if n > len(lines) or not lines[n - 1].strip():
                raise InputFileError(
                    f"{req.path} has no line {n} with a record", f"it has {len(lines)} lines"
                )
            obj = readers.loads_json(lines[n - 1], req.path, line=n, hint="one eval object per line")
            items.append((obj, f"{req.path}:{n}", f"{rel}#L{n}"))
    else:
        obj = readers.loads_json(text, req.path, hint="give result.json")
        items.append((obj, req.path, rel))
    records = [
        record_from_eval(
            obj,
            where,
            operator=req.operator,
            dtype=req.dtype,
            gpu=req.gpu,
            arch=req.arch,
            change=req.change,
            parent_id=req.parent_id,
            tags=req.tags,
            link_field="ledger" if is_ledger else "result_json",
            link=link,
            workspace=os.path.relpath(root.resolve(), Path.cwd().resolve()) if req.workspace else None,
        )
        for obj, where, link in items
    ]
    records = list({r.id: r for r in records}.values())  # the same line twice is one attempt
    with store_session(req.db) as store:
        existing = {r.id for r in store.get_many([r.id for r in records])}
        new = [r for r in records if r.id not in existing]
        store.create(new, on_conflict="skip")
        return IngestResult(
            db=store.url,
            created=[r.id for r in new],
            existing=[r.id for r in records if r.id in existing],
            records=store.get_many([r.id for r in records]),
            unreadable=store.skipped,
        )
