"""SQLite backend of the experiment store: one file, WAL, transactions, schema migrations.

- Opening never writes to a file that is not already an SQLite database (header checked first), so a
  corrupt or foreign file gives `StoreCorruptError` and stays byte-for-byte as it was.
- Writers take the lock up front (`BEGIN IMMEDIATE`) and wait up to the busy timeout; past it,
  `StoreLockedError`.
- `schema_version` holds the version; `MIGRATIONS[v]` upgrades v-1 -> v inside one transaction. A
  fresh file runs every migration from 1, so the upgrade path is exercised on every new store. A user's
  older store is never migrated by the way (a read would change it): opening refuses it untouched, and
  `kernelpilot exp upgrade` (`upgrade=True`) copies it beside itself first, then migrates.
- Text search uses FTS5 when this SQLite has it (checked when the schema is created), else LIKE
  with its wildcards escaped.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpilot.experiments import sqlbuild
from kernelpilot.experiments.errors import StoreCorruptError, StoreLockedError, StoreVersionError
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.sqlstore import SQLStore
from kernelpilot.experiments.store import busy_timeout_default, iso, stored_record_problem
from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import StoreError

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


def upgrade_v1_document(doc: dict[str, Any]) -> dict[str, Any]:
    """A v1 flat document as a v2 record dict; every v1 field lands somewhere (nothing dropped)."""
    known = {
        "id", "parent_id", "created", "operator", "dtype", "shapes", "gpu", "arch", "driver", "toolkit",
        "libraries", "base_commit", "diff_hash", "summary", "details", "raw_result", "score", "status",
        "is_buggy", "error_message", "metrics", "tags", "ledger", "result_json",
    }  # fmt: skip
    leftovers = {k: v for k, v in doc.items() if k not in known}
    raw_result = doc.get("raw_result") or {}
    if not isinstance(raw_result, dict):
        raise ValueError(f"its raw_result is a JSON {type(raw_result).__name__}, not an object")
    raw = dict(raw_result)
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
    seen: set[str] = set()
    for rid, doc in rows:
        rec = _v1_record(rid, doc)
        if rec.id in seen:
            raise StoreCorruptError(
                f"two records of the v1 store have id {rec.id!r}; the upgrade was refused",
                "give one of them another id (its `doc` column) with the sqlite3 shell, then upgrade",
            )
        seen.add(rec.id)
        conn.execute(_INSERT, sqlbuild.row(rec, iso))
        conn.executemany("INSERT INTO tags (tag, record_id) VALUES (?, ?)", [(t, rec.id) for t in rec.tags])
    conn.execute("DROP TABLE experiments")


def _v1_record(rid: Any, doc: Any) -> ExperimentRecord:
    """One v1 row as a v2 record, or `StoreCorruptError` naming the row (the upgrade is then refused whole).

    Why each guard: the row's JSON goes through the guarded parser (depth, number length, surrogates), a
    document that is not an object is named, and a field of the wrong shape (`raw_result` a list, `tags`
    a string) fails as the record's error rather than as a TypeError deep in the migration (issue 41).
    """
    hint = "fix the record's `doc` column with the sqlite3 shell (or delete the row), then upgrade again"
    try:
        if not isinstance(doc, str):
            raise ValueError(f"its document is stored as {type(doc).__name__}, not JSON text")
        data = readers.loads_json(doc, f"v1 record {rid!r}")
        if not isinstance(data, dict):
            raise ValueError(f"its document is a JSON {type(data).__name__}, not an object")
        return ExperimentRecord.model_validate(upgrade_v1_document(data))
    except ValidationError as exc:
        problem = stored_record_problem(exc)
    except (ValueError, KeyError, TypeError, AttributeError, readers.ReaderError) as exc:
        problem = str(exc) if not isinstance(exc, KeyError) else f"its document has no {exc} field"
    raise StoreCorruptError(f"record {rid!r} of the v1 store cannot be upgraded: {problem[:300]}", hint)


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


_INSERT = sqlbuild.insert_sql("?")
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


class SQLiteStore(SQLStore):
    """The experiment store in one SQLite file."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_s: float | None = None,
        upgrade: bool = False,
        make_folder: bool = True,
    ) -> None:
        """Open the store; an older schema is refused (left untouched) unless `upgrade`, which first
        copies the file to `<name>.v<N>.bak` (`backup`) and then migrates it. A missing folder is created
        only with `make_folder` (the default location); else it is a typed error."""
        self.path = path
        self.url = str(path)
        self.busy_timeout_s = busy_timeout_default() if busy_timeout_s is None else busy_timeout_s
        self.upgraded_from: int | None = None
        self.backup: Path | None = None
        self._check_header()
        if not path.parent.is_dir():
            if not make_folder:
                raise StoreError(
                    f"the folder {path.parent} of the experiment store {path} does not exist",
                    "create it first, or give --db / KERNELPILOT_DB a path in an existing folder",
                )
            path.parent.mkdir(parents=True, exist_ok=True)
        with self._errors("open"):
            self.conn = sqlite3.connect(
                str(path), timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        # A stored text that is not UTF-8 (a row edited by hand) must fail that record only, not the query
        # that fetched it: decoded with surrogateescape, it then fails record validation and is skipped.
        self.conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
        try:
            with self._errors("open"):
                self.conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            self._open_schema(upgrade)
        except BaseException:
            self.conn.close()
            self._drop_unused_backup()
            raise
        self.dialect = sqlbuild.Dialect(ph="?", time=iso, text_all=self._text_all)

    def _open_schema(self, upgrade: bool) -> None:
        """Journal mode, schema and FTS check, retried while another process holds the lock.

        Why retried: many processes opening one fresh file at once race for the exclusive lock that
        `PRAGMA journal_mode = WAL` and the first migration take, and SQLite may answer SQLITE_BUSY there
        without waiting on the busy handler (issue 34: 1 run in 9 of `test_concurrent_writers` on a loaded
        2-core machine). Each step re-reads the state, so a retry after another process won is a no-op.
        """
        deadline = time.monotonic() + max(self.busy_timeout_s, 1.0)
        pause = 0.001
        while True:
            try:
                self._open_schema_once(upgrade)
                return
            except StoreLockedError:
                if time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)  # back off: another opener holds the lock for a few milliseconds
            pause = min(pause * 2, 0.05)

    def _open_schema_once(self, upgrade: bool) -> None:
        # read-only checks first: a foreign, newer or older file must not even get its journal mode changed
        version = self._read_version()
        self._check_not_newer(version)
        if version is not None and version < CURRENT_VERSION and self.upgraded_from is None:
            if not upgrade:
                raise StoreVersionError(
                    f"experiment store {self.path} has schema version {version} (this kernelpilot reads "
                    f"{CURRENT_VERSION}); it was left untouched",
                    f"run `kernelpilot exp upgrade --db {self.path}` (it keeps a copy of the old file "
                    "beside it)",
                )
            self.backup = self._copy_beside(version)
            self.upgraded_from = version
        # Migrate before the switch to WAL: a migration that fails rolls back in the file's own journal
        # mode, so a refused upgrade leaves the original byte-for-byte as it was (issue 41).
        self._migrate()
        self._migrated = True
        with self._errors("open"):
            if self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        with self._errors("open"):
            self.has_fts = bool(
                self.conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records_fts'"
                ).fetchone()
            )

    def _copy_beside(self, version: int) -> Path:
        """A consistent copy of the old store (SQLite's backup API), `<name>.v<N>.bak`, never overwritten.

        The name is claimed with O_CREAT|O_EXCL|O_NOFOLLOW before SQLite opens it: any existing entry,
        a dangling symlink included, is skipped, so the copy never lands where a link points (issue 41).
        """
        n = 1
        while True:
            suffix = f".v{version}.bak" if n == 1 else f".v{version}.{n}.bak"
            target = self.path.with_name(self.path.name + suffix)
            try:
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except FileExistsError:
                n += 1
                continue
            except OSError as exc:
                raise StoreError(
                    f"cannot create the backup {target} before the upgrade: {exc.strerror}",
                    f"make {self.path.parent} writable, or copy the store elsewhere and upgrade the copy",
                ) from exc
            os.close(fd)
            break
        with self._errors("copy before upgrade"):
            dst = sqlite3.connect(str(target))
            try:
                self.conn.backup(dst)
            finally:
                dst.close()
        return target

    def _drop_unused_backup(self) -> None:
        """Remove the copy made for an upgrade that did not happen (the original is unchanged)."""
        if self.backup is not None and not getattr(self, "_migrated", False):
            with contextlib.suppress(FileNotFoundError):
                self.backup.unlink()
            self.backup = None

    # ---- plumbing ----
    def _check_header(self) -> None:
        """Refuse, before SQLite opens anything, a path that is not a regular file (or missing).

        Why: SQLite's open of a FIFO blocks for ever (every store command hung, and over MCP each call held
        a worker thread: issue 41); a device or directory is no store; a dangling link would make SQLite
        create the file where the link points. The open is non-blocking and the kind is read from the
        opened descriptor, so a FIFO swapped in after a check cannot block either. The journal files
        SQLite opens beside the store (`-wal`, `-shm`, `-journal`) are held to the same rule.
        """
        for side in ("-wal", "-shm", "-journal"):
            self._check_kind(Path(str(self.path) + side), "the store's journal file ")
        head = self._check_kind(self.path, "")
        if head and head != SQLITE_HEADER:
            raise StoreCorruptError(
                f"{self.path} is not an SQLite database (bad header); it was left untouched",
                "point --db / KERNELPILOT_DB at an experiment store, or move the file away",
            )

    def _check_kind(self, path: Path, what: str) -> bytes:
        """The first bytes of `path` if it is a regular file, b"" if it does not exist; else a typed error."""
        hint = "point --db / KERNELPILOT_DB at an experiment store file (or a new name in an existing folder)"
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError as exc:
            if os.path.islink(path):  # a dangling link: SQLite would create its target
                raise StoreError(f"{what}{path} is a symbolic link to a missing file", hint) from exc
            return b""
        except OSError as exc:  # ELOOP, ENAMETOOLONG, EACCES, ENXIO (a socket)
            raise StoreError(f"cannot open {what}{path}: {exc.strerror}", hint) from exc
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise StoreCorruptError(f"database path {what}{path} is a directory", hint)
            if not stat.S_ISREG(mode):
                raise StoreCorruptError(
                    f"{what}{path} is not a regular file (a FIFO, device or socket); it was left untouched",
                    hint,
                )
            try:
                return os.read(fd, len(SQLITE_HEADER))
            except OSError as exc:
                raise StoreError(f"cannot read {what}{path}: {exc.strerror}", "check permissions") from exc
        finally:
            os.close(fd)

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
        value = row[0] if row else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise StoreCorruptError(
                f"{self.path}: its schema_version table holds {value!r}, not a schema version (1.."
                f"{CURRENT_VERSION}); it was left untouched",
                "restore the store from a backup or a JSONL export (kernelpilot writes 1 or 2 there)",
            )
        return value

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
            return sqlbuild.like_summary_or_description(raw, "?")
        if self.has_fts:
            query = " ".join('"' + t.replace('"', '""') + '"*' for t in tokens)
            return "rowid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)", [query]
        parts, params = [], []
        for t in tokens:
            sql, ps = sqlbuild.like_summary_or_description(t, "?")
            parts.append(sql)
            params.extend(ps)
        return "(" + " AND ".join(parts) + ")", params

    # ---- hooks of SQLStore ----
    def _existing(self, conn: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            sql = "SELECT id FROM records WHERE id IN (" + ", ".join("?" * len(chunk)) + ")"
            found.update(r[0] for r in conn.execute(sql, chunk).fetchall())
        return found

    def _delete(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        conn.executemany("DELETE FROM records WHERE id = ?", [(i,) for i in ids])
        conn.executemany("DELETE FROM tags WHERE record_id = ?", [(i,) for i in ids])

    def _executemany(self, conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
        conn.executemany(sql, rows)

    def _similar_text(self, tokens: Sequence[str]) -> tuple[str, list[Any]]:
        if self.has_fts:
            q = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
            return (
                "SELECT doc, id FROM records WHERE rowid IN (SELECT rowid FROM records_fts "
                "WHERE records_fts MATCH ? ORDER BY rank LIMIT ?)",
                [q],
            )
        ors = " OR ".join(["summary LIKE ? ESCAPE '\\'"] * len(tokens))
        return (
            f"SELECT doc, id FROM records WHERE {ors} ORDER BY created DESC LIMIT ?",
            [sqlbuild.like_pattern(t) for t in tokens],
        )

    # ---- API ----
    def schema_version(self) -> int:
        return self._read_version() or 0

    def get_many(self, record_ids: Sequence[str]) -> list[ExperimentRecord]:
        out: dict[str, ExperimentRecord] = {}
        for i in range(0, len(record_ids), 500):
            chunk = list(record_ids[i : i + 500])
            sql = "SELECT doc, id FROM records WHERE id IN (" + ", ".join("?" * len(chunk)) + ")"
            out.update((r.id, r) for r in self._docs(sql, chunk, "get"))
        return [out[i] for i in record_ids if i in out]

    def analyze(self) -> None:
        with self._errors("analyze"):
            self.conn.execute("ANALYZE")
