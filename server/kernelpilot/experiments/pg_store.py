"""PostgreSQL backend of the experiment store (psycopg 3), for a team sharing one history.

Same API and same semantics as the SQLite store: the record is kept verbatim as its JSON document
(`doc`, TEXT so floats and key order come back byte-identical) beside projected columns for queries;
text search uses a generated `tsvector` (config `simple`) with a GIN index. Schema changes run in one
transaction under an advisory lock, so several machines opening a fresh database at once are safe.
The PostgreSQL schema starts at version 2 (the SQLite v1 layout never existed here).
Only this module imports psycopg (the `postgres` extra).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from kernelpilot.errors import NotFoundError, StoreError
from kernelpilot.experiments import sqlbuild
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.sqlite_store import apply_changes
from kernelpilot.experiments.store import (
    Conflict,
    DuplicateRecordError,
    RecordFilter,
    StoreConnectionError,
    StoreLockedError,
    StoreVersionError,
    busy_timeout_default,
)

CURRENT_VERSION = 2
_LOCK_KEY = 0x6B70_6578  # advisory lock id for schema changes ("kpex")

_V2_DDL = [
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE records (
        id TEXT PRIMARY KEY,
        parent_id TEXT,
        created TIMESTAMPTZ NOT NULL,
        updated TIMESTAMPTZ,
        operator TEXT NOT NULL,
        dtype TEXT NOT NULL,
        gpu TEXT NOT NULL,
        arch TEXT NOT NULL,
        status TEXT NOT NULL,
        score DOUBLE PRECISION,
        is_buggy BOOLEAN NOT NULL,
        summary TEXT NOT NULL,
        description TEXT NOT NULL,
        doc TEXT NOT NULL,
        fts TSVECTOR GENERATED ALWAYS AS
            (to_tsvector('simple'::regconfig, summary || ' ' || description)) STORED
    )""",
    "CREATE TABLE tags (tag TEXT NOT NULL, record_id TEXT NOT NULL, PRIMARY KEY (tag, record_id))",
    "CREATE INDEX tags_record ON tags (record_id)",
    "CREATE INDEX records_created ON records (created, id)",
    "CREATE INDEX records_top ON records (score DESC, created DESC) WHERE score IS NOT NULL",
    "CREATE INDEX records_operator_score ON records (operator, score DESC)",
    "CREATE INDEX records_operator_created ON records (operator, created)",
    "CREATE INDEX records_status_created ON records (status, created)",
    "CREATE INDEX records_dtype_created ON records (dtype, created)",
    "CREATE INDEX records_arch_created ON records (arch, created)",
    "CREATE INDEX records_parent ON records (parent_id)",
    "CREATE INDEX records_fts ON records USING GIN (fts)",
]

_DISTINCT_OPERATORS = (
    "WITH RECURSIVE ops(op) AS (SELECT MIN(operator) FROM records UNION ALL "
    "SELECT (SELECT MIN(operator) FROM records WHERE operator > ops.op) FROM ops WHERE ops.op IS NOT NULL) "
    "SELECT op FROM ops WHERE op IS NOT NULL"
)
_COLS = (
    "id, parent_id, created, updated, operator, dtype, gpu, arch, status, score, is_buggy, summary, "
    "description, doc"
)
_INSERT = f"INSERT INTO records ({_COLS}) VALUES (" + ", ".join(["%s"] * 14) + ")"


def _row(rec: ExperimentRecord) -> tuple[Any, ...]:
    return (
        rec.id,
        rec.parent_id,
        rec.created,
        rec.updated,
        rec.operator,
        rec.dtype,
        rec.gpu,
        rec.arch,
        rec.status.value,
        rec.score,
        rec.is_buggy,
        rec.summary,
        sqlbuild.search_text(rec),
        rec.model_dump_json(),
    )


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep:
        return url
    scheme, _, cred = head.partition("://")
    user = cred.split(":", 1)[0]
    return f"{scheme}://{user}@{tail}"


def _tsquery(tokens: Sequence[str], op: str, prefix: bool) -> str:
    # tokens are letters/digits only (store.text_tokens), so quoting them is all tsquery needs
    return f" {op} ".join(f"'{t}'" + (":*" if prefix else "") for t in tokens)


class PostgresStore:
    """The experiment store in a PostgreSQL database."""

    def __init__(self, url: str, *, busy_timeout_s: float | None = None) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreError(
                "the PostgreSQL backend needs psycopg 3, which is not installed",
                "pip install 'kernelpilot[postgres]' (or: pip install 'psycopg[binary]>=3.2')",
            ) from exc
        self._pg = psycopg
        self.url = _redact(url)
        self.busy_timeout_s = busy_timeout_default() if busy_timeout_s is None else busy_timeout_s
        connect_timeout = max(2, int(self.busy_timeout_s))
        try:
            self.conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout)
        except psycopg.Error as exc:
            raise StoreConnectionError(
                f"cannot connect to the experiment store {self.url}: {str(exc).strip()}",
                "check the URL, that the server runs and accepts this user, or use a SQLite path",
            ) from exc
        try:
            with self._errors("open"):
                ms = max(1, int(self.busy_timeout_s * 1000))
                self.conn.execute(f"SET lock_timeout = {ms}")
            self._migrate()
        except BaseException:
            self.conn.close()
            raise
        self.dialect = sqlbuild.Dialect(ph="%s", time=lambda t: t, text_all=self._text_all)

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        errors = self._pg.errors
        try:
            yield
        except (errors.LockNotAvailable, errors.QueryCanceled, errors.DeadlockDetected) as exc:
            raise StoreLockedError(
                f"experiment store {self.url} is locked ({what}: {str(exc).strip()})",
                "wait for the other writer, or raise KERNELPILOT_DB_BUSY_TIMEOUT_S",
            ) from exc
        except errors.UniqueViolation as exc:
            raise DuplicateRecordError(
                f"record already exists ({what}: {str(exc).strip()})",
                "use exp update, or import with --on-conflict skip|replace",
            ) from exc
        except self._pg.OperationalError as exc:
            raise StoreConnectionError(
                f"experiment store {self.url}: {what} failed: {str(exc).strip()}", "check the server"
            ) from exc
        except self._pg.Error as exc:
            raise StoreError(
                f"experiment store {self.url}: {what} failed: {str(exc).strip()}", "see message"
            ) from exc

    @contextlib.contextmanager
    def _write(self, what: str) -> Iterator[Any]:
        with self._errors(what), self.conn.transaction():
            yield self.conn

    def _read_version(self) -> int | None:
        # A plain MVCC read of pg_tables, not to_regclass(): after waiting on the advisory lock the
        # backend's catalog cache may not yet know the table another session just created.
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables"
            " WHERE schemaname = current_schema() AND tablename = 'schema_version')"
        ).fetchone()
        if not row or not row[0]:
            return None
        v = self.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(v[0]) if v and v[0] is not None else 0

    def _migrate(self) -> None:
        with self._errors("read schema version"):
            version = self._read_version()
        if version == CURRENT_VERSION:
            return
        with self._write("migrate schema") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            version = self._read_version()
            if version is not None and version > CURRENT_VERSION:
                raise StoreVersionError(
                    f"experiment store {self.url} has schema version {version}; this kernelpilot knows "
                    f"up to {CURRENT_VERSION}",
                    "upgrade kernelpilot",
                )
            if version == CURRENT_VERSION:
                return
            for stmt in _V2_DDL:
                conn.execute(stmt)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (CURRENT_VERSION,))

    def _text_all(self, tokens: list[str], raw: str) -> tuple[str, list[Any]]:
        if not tokens:
            pat = sqlbuild.like_pattern(raw)
            return "(summary LIKE %s ESCAPE '\\' OR description LIKE %s ESCAPE '\\')", [pat, pat]
        return "fts @@ to_tsquery('simple'::regconfig, %s)", [_tsquery(tokens, "&", prefix=True)]

    def _docs(self, sql: str, params: Sequence[Any], what: str) -> list[ExperimentRecord]:
        with self._errors(what):
            rows = self.conn.execute(sql, params).fetchall()
        return [ExperimentRecord.model_validate_json(r[0]) for r in rows]

    # ---- API ----
    def schema_version(self) -> int:
        with self._errors("read schema version"):
            return self._read_version() or 0

    def create(self, records: Sequence[ExperimentRecord], on_conflict: Conflict = "error") -> int:
        if not records:
            return 0
        ids = [r.id for r in records]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise DuplicateRecordError(f"record id {dup!r} appears twice in one batch", "give unique ids")
        with self._write("create") as conn:
            rows = conn.execute("SELECT id FROM records WHERE id = ANY(%s)", (ids,)).fetchall()
            existing = {r[0] for r in rows}
            if existing and on_conflict == "error":
                raise DuplicateRecordError(
                    f"record id {sorted(existing)[0]!r} already exists ({len(existing)} of {len(ids)} do)",
                    "use exp update to change it, or import with --on-conflict skip|replace",
                )
            todo = list(records)
            if on_conflict == "skip":
                todo = [r for r in records if r.id not in existing]
            elif on_conflict == "replace" and existing:
                conn.execute("DELETE FROM records WHERE id = ANY(%s)", (list(existing),))
                conn.execute("DELETE FROM tags WHERE record_id = ANY(%s)", (list(existing),))
            with conn.cursor() as cur:
                if todo:
                    cur.executemany(_INSERT, [_row(r) for r in todo])
                tag_rows = [(t, r.id) for r in todo for t in r.tags]
                if tag_rows:
                    cur.executemany("INSERT INTO tags (tag, record_id) VALUES (%s, %s)", tag_rows)
        return len(todo)

    def get(self, record_id: str) -> ExperimentRecord:
        recs = self._docs("SELECT doc FROM records WHERE id = %s", [record_id], "get")
        if not recs:
            raise NotFoundError(f"no experiment record with id {record_id!r} in {self.url}", "see exp list")
        return recs[0]

    def get_many(self, record_ids: Sequence[str]) -> list[ExperimentRecord]:
        got = {
            r.id: r
            for r in self._docs("SELECT doc FROM records WHERE id = ANY(%s)", [list(record_ids)], "get")
        }
        return [got[i] for i in record_ids if i in got]

    def update(self, record_id: str, changes: dict[str, Any]) -> ExperimentRecord:
        with self._write("update") as conn:
            row = conn.execute("SELECT doc FROM records WHERE id = %s FOR UPDATE", (record_id,)).fetchone()
            if row is None:
                raise NotFoundError(
                    f"no experiment record with id {record_id!r} in {self.url}", "see exp list"
                )
            rec = apply_changes(ExperimentRecord.model_validate_json(row[0]), changes)
            r = _row(rec)
            conn.execute(
                "UPDATE records SET parent_id = %s, created = %s, updated = %s, operator = %s, dtype = %s, "
                "gpu = %s, arch = %s, status = %s, score = %s, is_buggy = %s, summary = %s, "
                "description = %s, doc = %s WHERE id = %s",
                (*r[1:], record_id),
            )
            conn.execute("DELETE FROM tags WHERE record_id = %s", (record_id,))
            with conn.cursor() as cur:
                if rec.tags:
                    cur.executemany(
                        "INSERT INTO tags (tag, record_id) VALUES (%s, %s)", [(t, rec.id) for t in rec.tags]
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
        sql = (
            f"SELECT doc FROM records{w} "
            f'ORDER BY created {direction}, id COLLATE "C" {direction} LIMIT %s OFFSET %s'
        )
        return self._docs(sql, [*params, limit, offset], "list")

    def count(self, flt: RecordFilter) -> int:
        w, params = sqlbuild.where(flt, self.dialect)
        with self._errors("count"):
            row = self.conn.execute(f"SELECT COUNT(*) FROM records{w}", params).fetchone()
        return int(row[0]) if row else 0

    def top(self, flt: RecordFilter, n: int, per_operator: bool = False) -> list[ExperimentRecord]:
        w, params = sqlbuild.where(flt, self.dialect)
        tc, tparams = sqlbuild.top_clause(self.dialect)
        cond = (w + " AND " + tc) if w else (" WHERE " + tc)
        if not per_operator:
            sql = f'SELECT doc FROM records{cond} ORDER BY score DESC, created DESC, id COLLATE "C" LIMIT %s'
            return self._docs(sql, [*params, *tparams, n], "top")
        # no filter: walk the operator index (loose index scan) instead of reading every row
        distinct = _DISTINCT_OPERATORS if not w else f"SELECT DISTINCT operator FROM records{w}"
        with self._errors("top"):
            ops = [r[0] for r in self.conn.execute(distinct, params).fetchall()]
        out: list[ExperimentRecord] = []
        for op in sorted(ops):
            sql = (
                f"SELECT doc FROM records{cond} AND operator = %s "
                'ORDER BY score DESC, created DESC, id COLLATE "C" LIMIT %s'
            )
            out.extend(self._docs(sql, [*params, *tparams, op, n], "top"))
        return out

    def similar_candidates(
        self, operator: str | None, dtype: str | None, arch: str | None, tokens: Sequence[str], limit: int
    ) -> list[ExperimentRecord]:
        queries: list[tuple[str, list[Any]]] = []
        if operator:
            queries.append(
                ("SELECT doc FROM records WHERE operator = %s ORDER BY created DESC LIMIT %s", [operator])
            )
        if tokens:
            queries.append(
                (
                    "SELECT doc FROM records WHERE fts @@ to_tsquery('simple'::regconfig, %s) "
                    "ORDER BY created DESC LIMIT %s",
                    [_tsquery(tokens, "|", prefix=False)],
                )
            )
        if dtype or arch:
            conds, ps = [], []
            if dtype:
                conds.append("dtype = %s")
                ps.append(dtype)
            if arch:
                conds.append("arch = %s")
                ps.append(arch)
            queries.append(
                (f"SELECT doc FROM records WHERE {' AND '.join(conds)} ORDER BY created DESC LIMIT %s", ps)
            )
        seen: dict[str, ExperimentRecord] = {}
        for sql, ps in queries:
            for rec in self._docs(sql, [*ps, limit], "similar"):
                seen.setdefault(rec.id, rec)
        return list(seen.values())

    def ancestors(self, record_id: str) -> list[ExperimentRecord]:
        out: list[ExperimentRecord] = []
        seen = {record_id}
        current = self.get(record_id).parent_id
        while current is not None and current not in seen and len(out) < 10000:
            found = self._docs("SELECT doc FROM records WHERE id = %s", [current], "lineage")
            if not found:
                break
            seen.add(current)
            out.append(found[0])
            current = found[0].parent_id
        return out

    def descendants(self, record_id: str, max_nodes: int = 10000) -> list[ExperimentRecord]:
        sql = (
            "WITH RECURSIVE d(id) AS (SELECT id FROM records WHERE parent_id = %s "
            "UNION SELECT r.id FROM records r JOIN d ON r.parent_id = d.id) "
            "SELECT doc FROM records WHERE id IN (SELECT id FROM d WHERE id <> %s LIMIT %s) "
            'ORDER BY created, id COLLATE "C"'
        )
        return self._docs(sql, [record_id, record_id, max_nodes], "lineage")

    def iter_all(self) -> Iterator[ExperimentRecord]:
        with self._errors("export"), self.conn.cursor() as cur:
            cur.execute('SELECT doc FROM records ORDER BY created, id COLLATE "C"')
            while rows := cur.fetchmany(1000):
                for r in rows:
                    yield ExperimentRecord.model_validate_json(r[0])

    def analyze(self) -> None:
        with self._errors("analyze"):
            self.conn.execute("ANALYZE records")
            self.conn.execute("ANALYZE tags")

    def close(self) -> None:
        self.conn.close()
