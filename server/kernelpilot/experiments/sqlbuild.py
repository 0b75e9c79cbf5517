"""SQL shared by both backends: the filter WHERE clause and the row projection of a record.

Everything user-supplied goes in as a bound parameter; the only text composed into SQL is fixed
column names and placeholders. Dialects differ in the placeholder, how a time is bound and how a
text search is spelled (SQLite FTS5 / LIKE, PostgreSQL tsvector / ILIKE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelpilot.experiments.record import ExperimentRecord, Status
from kernelpilot.experiments.store import RecordFilter, text_tokens

TOP_EXCLUDED = (Status.crash.value, Status.incorrect.value)


@dataclass(frozen=True)
class Dialect:
    ph: str
    time: Callable[[datetime], Any]
    # (tokens, raw query) -> (sql, params) for "all words appear in summary/description"
    text_all: Callable[[list[str], str], tuple[str, list[Any]]]
    # the id tie-break of an ORDER BY (PostgreSQL sorts ids bytewise, as SQLite does)
    id_order: str = "id"


COLS = (
    "id, parent_id, created, updated, operator, dtype, gpu, arch, status, score, is_buggy, summary, "
    "description, doc"
)


def insert_sql(ph: str) -> str:
    """INSERT of one `row()` into records."""
    return f"INSERT INTO records ({COLS}) VALUES (" + ", ".join([ph] * 14) + ")"


def row(rec: ExperimentRecord, time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """The record's values in `COLS` order; `time` binds a datetime for the backend."""
    return (
        rec.id,
        rec.parent_id,
        time(rec.created),
        time(rec.updated) if rec.updated else None,
        rec.operator,
        rec.dtype,
        rec.gpu,
        rec.arch,
        rec.status.value,
        rec.score,
        rec.is_buggy,
        rec.summary,
        search_text(rec),
        rec.model_dump_json(),
    )


def like_pattern(fragment: str) -> str:
    """`%fragment%` with LIKE's own wildcards escaped (escape character backslash)."""
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def like_summary_or_description(fragment: str, ph: str) -> tuple[str, list[Any]]:
    """Substring match of `fragment` in summary or description, and its parameters."""
    pat = like_pattern(fragment)
    return f"(summary LIKE {ph} ESCAPE '\\' OR description LIKE {ph} ESCAPE '\\')", [pat, pat]


def where(flt: RecordFilter, d: Dialect) -> tuple[str, list[Any]]:
    """`WHERE ...` (or empty) and its parameters for a filter."""
    parts: list[str] = []
    params: list[Any] = []
    for col in ("operator", "dtype", "gpu", "arch", "parent_id"):
        value = getattr(flt, col)
        if value is not None:
            parts.append(f"{col} = {d.ph}")
            params.append(value)
    if flt.status:
        parts.append("status IN (" + ", ".join([d.ph] * len(flt.status)) + ")")
        params.extend(s.value for s in flt.status)
    for tag in flt.tag:
        parts.append(f"id IN (SELECT record_id FROM tags WHERE tag = {d.ph})")
        params.append(tag)
    if flt.since is not None:
        parts.append(f"created >= {d.ph}")
        params.append(d.time(flt.since))
    if flt.until is not None:
        parts.append(f"created <= {d.ph}")
        params.append(d.time(flt.until))
    if flt.buggy is not None:
        parts.append(f"is_buggy = {d.ph}")
        params.append(flt.buggy)
    if flt.min_score is not None:
        parts.append(f"score >= {d.ph}")
        params.append(flt.min_score)
    if flt.text:
        sql, tparams = d.text_all(text_tokens(flt.text), flt.text)
        parts.append(sql)
        params.extend(tparams)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


def top_clause(d: Dialect) -> tuple[str, list[Any]]:
    """Condition of a rankable record: scored, not buggy, not crashed / incorrect."""
    return (
        f"score IS NOT NULL AND is_buggy = {d.ph} AND status NOT IN ({d.ph}, {d.ph})",
        [False, *TOP_EXCLUDED],
    )


def search_text(rec: ExperimentRecord) -> str:
    """The description text indexed for search: the four parts and the error message."""
    return "\n".join(p for p in (rec.description.text(), rec.error_message or "") if p)
