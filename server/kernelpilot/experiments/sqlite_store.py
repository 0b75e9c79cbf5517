"""SQLite backend of the experiment store: one file, WAL, transactions, schema migrations.

- Opening never writes to a file that is not already an SQLite database (header checked first), so a
  corrupt or foreign file gives `StoreCorruptError` and stays byte-for-byte as it was.
- Writers take the lock up front (`BEGIN IMMEDIATE`) and wait up to the busy timeout; past it,
  `StoreLockedError`.
- `schema_version` holds the version; `MIGRATIONS[v]` upgrades v-1 -> v inside one transaction. A
  fresh file runs every migration from 1, so the upgrade path is exercised on every new store.
- Text search uses FTS5 when this SQLite has it (checked when the schema is created), else LIKE
  with its wildcards escaped.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from kernelpilot.errors import InvalidArgumentError, NotFoundError, StoreError
from kernelpilot.experiments import sqlbuild
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.store import (
    Conflict,
    DuplicateRecordError,
    RecordFilter,
    StoreCorruptError,
    StoreLockedError,
    StoreVersionError,
    busy_timeout_default,
    iso,
    record_error,
)

SQLITE_HEADER = b"SQLite format 3\x00"  # https://www.sqlite.org/fileformat.html section 1.3
CURRENT_VERSION = 2

# ---- schema v1 (kernelpilot 0.0.x): one table, the record as a flat JSON document ----
_V1_DDL = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE experiments (
    id TEXT PRIMARY KEY,
    parent_id TEXT,
    created TEXT NOT NULL,
    operator TEXT NOT NULL,
    dtype TEXT NOT NULL DEFAULT '',
    arch TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    score REAL,
    summary TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE INDEX experiments_created ON experiments (created);
"""

# ---- schema v2: structured record document, tags table, search index, query indexes ----
_V2_DDL = """
CREATE TABLE records (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    created TEXT NOT NULL,
    updated TEXT,
    operator TEXT NOT NULL,
    dtype TEXT NOT NULL,
    gpu TEXT NOT NULL,
    arch TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    is_buggy INTEGER NOT NULL,
    summary TEXT NOT NULL,
    description TEXT NOT NULL,
    doc TEXT NOT NULL
);
CREATE TABLE tags (
    tag TEXT NOT NULL,
    record_id TEXT NOT NULL,
    PRIMARY KEY (tag, record_id)
) WITHOUT ROWID;
CREATE INDEX tags_record ON tags (record_id);
CREATE INDEX records_created ON records (created, id);
CREATE INDEX records_top ON records (score DESC, created DESC) WHERE score IS NOT NULL;
CREATE INDEX records_operator_score ON records (operator, score DESC);
CREATE INDEX records_operator_created ON records (operator, created);
CREATE INDEX records_status_created ON records (status, created);
CREATE INDEX records_dtype_created ON records (dtype, created);
CREATE INDEX records_arch_created ON records (arch, created);
CREATE INDEX records_parent ON records (parent_id);
"""

_FTS_DDL = """
CREATE VIRTUAL TABLE records_fts USING fts5(
    summary, description, content='records', content_rowid='rowid'
);
CREATE TRIGGER records_fts_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts (rowid, summary, description) VALUES (new.rowid, new.summary, new.description);
END;
CREATE TRIGGER records_fts_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts (records_fts, rowid, summary, description)
    VALUES ('delete', old.rowid, old.summary, old.description);
END;
CREATE TRIGGER records_fts_au AFTER UPDATE ON records BEGIN
    INSERT INTO records_fts (records_fts, rowid, summary, description)
    VALUES ('delete', old.rowid, old.summary, old.description);
    INSERT INTO records_fts (rowid, summary, description) VALUES (new.rowid, new.summary, new.description);
END;
"""

_INSERT = (
    "INSERT INTO records (id, parent_id, created, updated, operator, dtype, gpu, arch, status, score, "
    "is_buggy, summary, description, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _row(rec: ExperimentRecord) -> tuple[Any, ...]:
    return (
        rec.id,
        rec.parent_id,
        iso(rec.created),
        iso(rec.updated) if rec.updated else None,
        rec.operator,
        rec.dtype,
        rec.gpu,
        rec.arch,
        rec.status.value,
        rec.score,
        int(rec.is_buggy),
        rec.summary,
        sqlbuild.search_text(rec),
        rec.model_dump_json(),
    )


def upgrade_v1_document(doc: dict[str, Any]) -> dict[str, Any]:
    """A v1 flat document as a v2 record dict; every v1 field lands somewhere (nothing dropped)."""
    known = {
        "id", "parent_id", "created", "operator", "dtype", "shapes", "gpu", "arch", "driver", "toolkit",
        "libraries", "base_commit", "diff_hash", "summary", "details", "raw_result", "score", "status",
        "is_buggy", "error_message", "metrics", "tags", "ledger", "result_json",
    }  # fmt: skip
    leftovers = {k: v for k, v in doc.items() if k not in known}
    raw = dict(doc.get("raw_result") or {})
    if leftovers:
        raw["v1_extra"] = leftovers
    return {
        "id": doc["id"],
        "parent_id": doc.get("parent_id"),
        "created": doc["created"],
        "operator": doc["operator"],
        "dtype": doc.get("dtype", ""),
        "shapes": doc.get("shapes") or {},
        "gpu": doc.get("gpu", ""),
        "arch": doc.get("arch", ""),
        "environment": {
            "driver": doc.get("driver"),
            "toolkit": doc.get("toolkit"),
            "libraries": doc.get("libraries") or {},
        },
        "base_commit": doc.get("base_commit"),
        "diff_hash": doc.get("diff_hash"),
        "summary": doc["summary"],
        "description": {"approach": doc.get("details") or ""},
        "raw_result": raw,
        "score": doc.get("score"),
        "status": doc["status"],
        "is_buggy": bool(doc.get("is_buggy", False)),
        "error_message": doc.get("error_message"),
        "profiling": {"key_metrics": doc.get("metrics") or {}},
        "tags": doc.get("tags") or [],
        "links": {"ledger": doc.get("ledger"), "result_json": doc.get("result_json")},
    }


def _migrate_1(conn: sqlite3.Connection, use_fts: bool) -> None:
    _run_script(conn, _V1_DDL)


def _migrate_2(conn: sqlite3.Connection, use_fts: bool) -> None:
    _run_script(conn, _V2_DDL)
    if use_fts:
        _run_script(conn, _FTS_DDL)
    rows = conn.execute("SELECT id, doc FROM experiments ORDER BY created, id").fetchall()
    for rid, doc in rows:
        try:
            rec = ExperimentRecord.model_validate(upgrade_v1_document(json.loads(doc)))
        except (ValueError, KeyError, ValidationError) as exc:
            raise StoreCorruptError(
                f"record {rid!r} of the v1 store cannot be upgraded: {exc}",
                "export the file with the kernelpilot version that wrote it, fix the record, re-import",
            ) from exc
        conn.execute(_INSERT, _row(rec))
        conn.executemany("INSERT INTO tags (tag, record_id) VALUES (?, ?)", [(t, rec.id) for t in rec.tags])
    conn.execute("DROP TABLE experiments")


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run DDL statements one by one inside the caller's transaction (executescript would commit)."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            conn.execute(buf)
            buf = ""
    if buf.strip():
        conn.execute(buf)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection, bool], None]] = {1: _migrate_1, 2: _migrate_2}


def fts5_available() -> bool:
    if os.environ.get("KERNELPILOT_DB_NO_FTS") == "1":
        return False
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(a)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


class SQLiteStore:
    """The experiment store in one SQLite file."""

    def __init__(self, path: Path, *, busy_timeout_s: float | None = None) -> None:
        self.path = path
        self.url = str(path)
        self.busy_timeout_s = busy_timeout_default() if busy_timeout_s is None else busy_timeout_s
        self._check_header()
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._errors("open"):
            self.conn = sqlite3.connect(
                str(path), timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        try:
            with self._errors("open"):
                self.conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            # read-only checks first: a foreign or newer file must not even get its journal mode changed
            self._check_not_newer(self._read_version())
            with self._errors("open"):
                self.conn.execute("PRAGMA journal_mode = WAL")
                self.conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
            with self._errors("open"):
                self.has_fts = bool(
                    self.conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records_fts'"
                    ).fetchone()
                )
        except BaseException:
            self.conn.close()
            raise
        self.dialect = sqlbuild.Dialect(ph="?", time=iso, text_all=self._text_all)

    # ---- plumbing ----
    def _check_header(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(len(SQLITE_HEADER))
        except FileNotFoundError:
            return
        except IsADirectoryError as exc:
            raise StoreCorruptError(f"database path {self.path} is a directory", "give a file path") from exc
        except OSError as exc:
            raise StoreError(
                f"cannot read database {self.path}: {exc.strerror}", "check permissions"
            ) from exc
        if head and head != SQLITE_HEADER:
            raise StoreCorruptError(
                f"{self.path} is not an SQLite database (bad header); it was left untouched",
                "point --db / KERNELPILOT_DB at an experiment store, or move the file away",
            )

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            msg = str(exc)
            if "locked" in msg or "busy" in msg:
                raise StoreLockedError(
                    f"experiment store {self.path} is locked by another process ({what}: {msg})",
                    "wait for the other writer, or raise KERNELPILOT_DB_BUSY_TIMEOUT_S",
                ) from exc
            if "no such module: fts5" in msg:
                raise StoreError(
                    f"experiment store {self.path} needs SQLite FTS5, which this Python lacks",
                    "use a Python whose sqlite3 has FTS5, or export/import into a new store",
                ) from exc
            raise StoreError(
                f"experiment store {self.path}: {what} failed: {msg}", "see the message"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise StoreCorruptError(
                f"experiment store {self.path} is corrupt or not a database ({what}: {exc})",
                "restore it from a JSONL export or a backup; kernelpilot did not modify it",
            ) from exc

    @contextlib.contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._errors(what):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def _read_version(self) -> int | None:
        with self._errors("read schema version"):
            tables = {
                r[0]
                for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
            }
            if "schema_version" not in tables:
                if tables:
                    raise StoreCorruptError(
                        f"{self.path} is an SQLite database but not a kernelpilot experiment store "
                        f"(tables: {', '.join(sorted(tables))}); it was left untouched",
                        "point --db / KERNELPILOT_DB at an experiment store file",
                    )
                return None
            row = self.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
            return int(row[0]) if row and row[0] is not None else 0

    def _migrate(self) -> None:
        version = self._read_version()
        if version == CURRENT_VERSION:
            return
        self._check_not_newer(version)
        use_fts = fts5_available()
        with self._write("migrate schema") as conn:
            version = self._read_version()  # another process may have migrated meanwhile
            self._check_not_newer(version)
            start = 0 if version is None else version
            for v in range(start + 1, CURRENT_VERSION + 1):
                MIGRATIONS[v](conn, use_fts)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (CURRENT_VERSION,))

    def _check_not_newer(self, version: int | None) -> None:
        if version is not None and version > CURRENT_VERSION:
            raise StoreVersionError(
                f"experiment store {self.path} has schema version {version}; this kernelpilot knows "
                f"up to {CURRENT_VERSION}",
                "upgrade kernelpilot",
            )

    def _text_all(self, tokens: list[str], raw: str) -> tuple[str, list[Any]]:
        if not tokens:  # punctuation only: substring match of the whole query
            pat = sqlbuild.like_pattern(raw)
            return "(summary LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')", [pat, pat]
        if self.has_fts:
            query = " ".join('"' + t.replace('"', '""') + '"*' for t in tokens)
            return "rowid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)", [query]
        parts, params = [], []
        for t in tokens:
            pat = sqlbuild.like_pattern(t)
            parts.append("(summary LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')")
            params.extend([pat, pat])
        return "(" + " AND ".join(parts) + ")", params

    def _docs(self, sql: str, params: Sequence[Any], what: str) -> list[ExperimentRecord]:
        with self._errors(what):
            rows = self.conn.execute(sql, params).fetchall()
        return [ExperimentRecord.model_validate_json(r[0]) for r in rows]

    # ---- API ----
    def schema_version(self) -> int:
        return self._read_version() or 0

    def create(self, records: Sequence[ExperimentRecord], on_conflict: Conflict = "error") -> int:
        if not records:
            return 0
        ids = [r.id for r in records]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise DuplicateRecordError(f"record id {dup!r} appears twice in one batch", "give unique ids")
        with self._write("create") as conn:
            existing = self._existing(conn, ids)
            if existing and on_conflict == "error":
                raise DuplicateRecordError(
                    f"record id {sorted(existing)[0]!r} already exists ({len(existing)} of {len(ids)} do)",
                    "use exp update to change it, or import with --on-conflict skip|replace",
                )
            todo = list(records)
            if on_conflict == "skip":
                todo = [r for r in records if r.id not in existing]
            elif on_conflict == "replace" and existing:
                conn.executemany("DELETE FROM records WHERE id = ?", [(i,) for i in existing])
                conn.executemany("DELETE FROM tags WHERE record_id = ?", [(i,) for i in existing])
            conn.executemany(_INSERT, [_row(r) for r in todo])
            conn.executemany(
                "INSERT INTO tags (tag, record_id) VALUES (?, ?)", [(t, r.id) for r in todo for t in r.tags]
            )
        return len(todo)

    @staticmethod
    def _existing(conn: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            sql = "SELECT id FROM records WHERE id IN (" + ", ".join("?" * len(chunk)) + ")"
            found.update(r[0] for r in conn.execute(sql, chunk).fetchall())
        return found

    def get(self, record_id: str) -> ExperimentRecord:
        recs = self._docs("SELECT doc FROM records WHERE id = ?", [record_id], "get")
        if not recs:
            raise NotFoundError(f"no experiment record with id {record_id!r} in {self.path}", "see exp list")
        return recs[0]

    def get_many(self, record_ids: Sequence[str]) -> list[ExperimentRecord]:
        out: dict[str, ExperimentRecord] = {}
        for i in range(0, len(record_ids), 500):
            chunk = list(record_ids[i : i + 500])
            sql = "SELECT doc FROM records WHERE id IN (" + ", ".join("?" * len(chunk)) + ")"
            out.update((r.id, r) for r in self._docs(sql, chunk, "get"))
        return [out[i] for i in record_ids if i in out]

    def update(self, record_id: str, changes: dict[str, Any]) -> ExperimentRecord:
        with self._write("update") as conn:
            row = conn.execute("SELECT doc FROM records WHERE id = ?", (record_id,)).fetchone()
            if row is None:
                raise NotFoundError(
                    f"no experiment record with id {record_id!r} in {self.path}", "see exp list"
                )
            rec = apply_changes(ExperimentRecord.model_validate_json(row[0]), changes)
            r = _row(rec)
            conn.execute(
                "UPDATE records SET parent_id = ?, created = ?, updated = ?, operator = ?, dtype = ?, "
                "gpu = ?, arch = ?, status = ?, score = ?, is_buggy = ?, summary = ?, description = ?, "
                "doc = ? WHERE id = ?",
                (*r[1:], record_id),
            )
            conn.execute("DELETE FROM tags WHERE record_id = ?", (record_id,))
            conn.executemany(
                "INSERT INTO tags (tag, record_id) VALUES (?, ?)", [(t, rec.id) for t in rec.tags]
            )
        return rec

    def query(
        self,
        flt: RecordFilter,
        limit: int = 50,
        offset: int = 0,
        order: Literal["newest", "oldest"] = "newest",
    ) -> list[ExperimentRecord]:
        w, params = sqlbuild.where(flt, self.dialect)
        direction = "DESC" if order == "newest" else "ASC"
        sql = f"SELECT doc FROM records{w} ORDER BY created {direction}, id {direction} LIMIT ? OFFSET ?"
        return self._docs(sql, [*params, limit, offset], "list")

    def count(self, flt: RecordFilter) -> int:
        w, params = sqlbuild.where(flt, self.dialect)
        with self._errors("count"):
            return int(self.conn.execute(f"SELECT COUNT(*) FROM records{w}", params).fetchone()[0])

    def top(self, flt: RecordFilter, n: int, per_operator: bool = False) -> list[ExperimentRecord]:
        w, params = sqlbuild.where(flt, self.dialect)
        tc, tparams = sqlbuild.top_clause(self.dialect)
        cond = (w + " AND " + tc) if w else (" WHERE " + tc)
        if not per_operator:
            sql = f"SELECT doc FROM records{cond} ORDER BY score DESC, created DESC, id LIMIT ?"
            return self._docs(sql, [*params, *tparams, n], "top")
        with self._errors("top"):
            ops = [r[0] for r in self.conn.execute(f"SELECT DISTINCT operator FROM records{w}", params)]
        out: list[ExperimentRecord] = []
        for op in sorted(ops):
            sql = (
                f"SELECT doc FROM records{cond} AND operator = ? "
                "ORDER BY score DESC, created DESC, id LIMIT ?"
            )
            out.extend(self._docs(sql, [*params, *tparams, op, n], "top"))
        return out

    def similar_candidates(
        self, operator: str | None, dtype: str | None, arch: str | None, tokens: Sequence[str], limit: int
    ) -> list[ExperimentRecord]:
        seen: dict[str, ExperimentRecord] = {}
        queries: list[tuple[str, list[Any]]] = []
        if operator:
            queries.append(
                ("SELECT doc FROM records WHERE operator = ? ORDER BY created DESC LIMIT ?", [operator])
            )
        if tokens:
            if self.has_fts:
                q = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
                queries.append(
                    (
                        "SELECT doc FROM records WHERE rowid IN (SELECT rowid FROM records_fts "
                        "WHERE records_fts MATCH ? ORDER BY rank LIMIT ?)",
                        [q],
                    )
                )
            else:
                ors = " OR ".join(["summary LIKE ? ESCAPE '\\'"] * len(tokens))
                queries.append(
                    (
                        f"SELECT doc FROM records WHERE {ors} ORDER BY created DESC LIMIT ?",
                        [sqlbuild.like_pattern(t) for t in tokens],
                    )
                )
        if dtype or arch:
            conds, ps = [], []
            if dtype:
                conds.append("dtype = ?")
                ps.append(dtype)
            if arch:
                conds.append("arch = ?")
                ps.append(arch)
            queries.append(
                (f"SELECT doc FROM records WHERE {' AND '.join(conds)} ORDER BY created DESC LIMIT ?", ps)
            )
        for sql, ps in queries:
            for rec in self._docs(sql, [*ps, limit], "similar"):
                seen.setdefault(rec.id, rec)
        return list(seen.values())

    def ancestors(self, record_id: str) -> list[ExperimentRecord]:
        out: list[ExperimentRecord] = []
        seen = {record_id}
        current = self.get(record_id).parent_id
        while current is not None and current not in seen and len(out) < 10000:
            found = self._docs("SELECT doc FROM records WHERE id = ?", [current], "lineage")
            if not found:
                break
            seen.add(current)
            out.append(found[0])
            current = found[0].parent_id
        return out

    def descendants(self, record_id: str, max_nodes: int = 10000) -> list[ExperimentRecord]:
        sql = (
            "WITH RECURSIVE d(id) AS (SELECT id FROM records WHERE parent_id = ? "
            "UNION SELECT r.id FROM records r JOIN d ON r.parent_id = d.id) "
            "SELECT doc FROM records WHERE id IN (SELECT id FROM d WHERE id <> ? LIMIT ?) "
            "ORDER BY created, id"
        )
        return self._docs(sql, [record_id, record_id, max_nodes], "lineage")

    def iter_all(self) -> Iterator[ExperimentRecord]:
        with self._errors("export"):
            cur = self.conn.execute("SELECT doc FROM records ORDER BY created, id")
            while rows := cur.fetchmany(1000):
                for r in rows:
                    yield ExperimentRecord.model_validate_json(r[0])

    def analyze(self) -> None:
        with self._errors("analyze"):
            self.conn.execute("ANALYZE")

    def close(self) -> None:
        self.conn.close()


FROZEN_FIELDS = ("id", "created", "record_version", "updated")


def apply_changes(rec: ExperimentRecord, changes: dict[str, Any]) -> ExperimentRecord:
    """The record with `changes` applied, re-validated, `updated` stamped now."""
    bad = [k for k in changes if k in FROZEN_FIELDS]
    if bad:
        raise InvalidArgumentError(f"field {bad[0]!r} cannot be changed by an update", "create a new record")
    unknown = [k for k in changes if k not in ExperimentRecord.model_fields]
    if unknown:
        raise InvalidArgumentError(
            f"unknown record field {unknown[0]!r}", "see exp get --json for field names"
        )
    data = rec.model_dump(mode="json")
    data.update(changes)
    data["updated"] = datetime.now(UTC)
    try:
        return ExperimentRecord.model_validate(data)
    except ValidationError as exc:
        raise record_error(exc, f"update of {rec.id}") from exc
