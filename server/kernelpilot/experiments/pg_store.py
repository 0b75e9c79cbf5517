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
from typing import Any

from kernelpilot.experiments import sqlbuild
from kernelpilot.experiments.errors import (
    DuplicateRecordError,
    StoreConnectionError,
    StoreLockedError,
    StoreVersionError,
)
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.sqlstore import SQLStore
from kernelpilot.experiments.store import busy_timeout_default
from kernelpilot.foundation.errors import StoreError

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


class PostgresStore(SQLStore):
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
        self.dialect = sqlbuild.Dialect(
            ph="%s", time=lambda t: t, text_all=self._text_all, id_order='id COLLATE "C"'
        )

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
            return sqlbuild.like_summary_or_description(raw, "%s")
        return "fts @@ to_tsquery('simple'::regconfig, %s)", [_tsquery(tokens, "&", prefix=True)]

    # ---- hooks of SQLStore ----
    _lock_for_update = " FOR UPDATE"

    def _existing(self, conn: Any, ids: Sequence[str]) -> set[str]:
        return {r[0] for r in conn.execute("SELECT id FROM records WHERE id = ANY(%s)", (list(ids),))}

    def _delete(self, conn: Any, ids: Sequence[str]) -> None:
        conn.execute("DELETE FROM records WHERE id = ANY(%s)", (list(ids),))
        conn.execute("DELETE FROM tags WHERE record_id = ANY(%s)", (list(ids),))

    def _executemany(self, conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            with conn.cursor() as cur:
                cur.executemany(sql, rows)

    def _similar_text(self, tokens: Sequence[str]) -> tuple[str, list[Any]]:
        return (
            "SELECT doc, id FROM records WHERE fts @@ to_tsquery('simple'::regconfig, %s) "
            "ORDER BY created DESC LIMIT %s",
            [_tsquery(tokens, "|", prefix=False)],
        )

    def _distinct_operators(self, w: str) -> str:
        # no filter: walk the operator index (loose index scan) instead of reading every row
        return _DISTINCT_OPERATORS if not w else super()._distinct_operators(w)

    # ---- API ----
    def schema_version(self) -> int:
        with self._errors("read schema version"):
            return self._read_version() or 0

    def get_many(self, record_ids: Sequence[str]) -> list[ExperimentRecord]:
        got = {
            r.id: r
            for r in self._docs("SELECT doc, id FROM records WHERE id = ANY(%s)", [list(record_ids)], "get")
        }
        return [got[i] for i in record_ids if i in got]

    def analyze(self) -> None:
        with self._errors("analyze"):
            self.conn.execute("ANALYZE records")
            self.conn.execute("ANALYZE tags")
