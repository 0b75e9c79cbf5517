"""SQLite-only behaviour: corrupt / foreign / locked / newer files, migration from schema v1, FTS
fallback, default location; and PostgreSQL's locked / unreachable server errors."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kernelpilot.experiments import ops
from kernelpilot.experiments.api import ExpUpgradeRequest
from kernelpilot.experiments.backends import open_store
from kernelpilot.experiments.errors import (
    StoreConnectionError,
    StoreCorruptError,
    StoreLockedError,
    StoreVersionError,
)
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.sqlite_store import SQLiteStore
from kernelpilot.experiments.store import RecordFilter, default_location
from kernelpilot.foundation.errors import StoreError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "experiments"


def _rec(i: int = 1) -> ExperimentRecord:
    return ExperimentRecord.model_validate(
        {"id": f"r{i}", "operator": "gemm", "summary": f"try {i} - ok", "status": "success", "score": 1.1}
    )


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "content",
    [b"\x00\xff garbage " * 300, b"SQLite format 3\x00" + b"\xde\xad\xbe\xef" * 1000, b"hello, not a db\n"],
    ids=["garbage", "bad-pages", "text"],
)
def test_corrupt_file_typed_error_and_untouched(tmp_path: Path, content: bytes) -> None:
    db = tmp_path / "exp.db"
    db.write_bytes(content)
    before = _sha(db)
    with pytest.raises(StoreCorruptError) as info:
        open_store(str(db))
    assert str(db) in info.value.message and info.value.hint
    assert _sha(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.db"]  # no -wal / -shm left either


def test_foreign_sqlite_db_untouched(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    before = _sha(db)
    with pytest.raises(StoreCorruptError, match="not a kernelpilot experiment store"):
        open_store(str(db))
    assert _sha(db) == before


def test_newer_schema_refused(tmp_path: Path) -> None:
    db = tmp_path / "exp.db"
    open_store(str(db)).close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(StoreVersionError, match="schema version 99"):
        open_store(str(db))


def test_locked_database(tmp_path: Path) -> None:
    db = tmp_path / "exp.db"
    store = open_store(str(db), busy_timeout_s=0.2)
    store.create([_rec(1)])
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLockedError, match="locked"):
            store.create([_rec(2)])
        with pytest.raises(StoreLockedError):
            store.update("r1", {"score": 2.0})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.create([_rec(2)]) == 1  # usable again once the lock is gone
    assert store.count(RecordFilter()) == 2
    store.close()


def test_directory_as_db(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="directory"):
        open_store(str(tmp_path))


def test_migrates_v1_fixture_without_loss(tmp_path: Path) -> None:
    src = FIX / "store_v1.db"
    fixture_sha = _sha(src)
    db = tmp_path / "old.db"
    shutil.copy(src, db)
    raw = sqlite3.connect(db)
    v1_docs = {r[0]: json.loads(r[1]) for r in raw.execute("SELECT id, doc FROM experiments")}
    assert raw.execute("SELECT version FROM schema_version").fetchone()[0] == 1
    raw.close()

    old_bytes = db.read_bytes()
    with pytest.raises(StoreVersionError, match="exp upgrade"):  # a read never migrates (issue 34)
        open_store(str(db))
    assert db.read_bytes() == old_bytes and not list(tmp_path.glob("old.db?*"))
    up = ops.upgrade(ExpUpgradeRequest(db=str(db)))
    assert (up.from_version, up.to_version, up.backup) == (1, 2, str(tmp_path / "old.db.v1.bak"))
    kept = sqlite3.connect(tmp_path / "old.db.v1.bak")
    assert kept.execute("SELECT version FROM schema_version").fetchone()[0] == 1
    assert kept.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == len(v1_docs)
    kept.close()
    assert ops.upgrade(ExpUpgradeRequest(db=str(db))).from_version is None  # already current: no-op
    store = open_store(str(db))
    try:
        assert store.schema_version() == 2
        assert store.count(RecordFilter()) == len(v1_docs) == 4
        for rid, d in v1_docs.items():
            r = store.get(rid)
            assert r.created == datetime.fromisoformat(d["created"].replace("Z", "+00:00"))
            assert (r.parent_id, r.operator, r.dtype, r.gpu, r.arch) == (
                d["parent_id"], d["operator"], d["dtype"], d["gpu"], d["arch"],
            )  # fmt: skip
            assert (r.summary, r.status.value, r.score, r.is_buggy, r.error_message) == (
                d["summary"], d["status"], d["score"], d["is_buggy"], d["error_message"],
            )  # fmt: skip
            assert r.shapes == d["shapes"] and r.tags == d["tags"]
            assert (r.base_commit, r.diff_hash) == (d["base_commit"], d["diff_hash"])
            assert r.environment.driver == d["driver"] and r.environment.toolkit == d["toolkit"]
            assert r.environment.libraries == d["libraries"]
            assert r.description.approach == d["details"]
            assert r.profiling.key_metrics == d["metrics"]
            assert (r.links.ledger, r.links.result_json) == (d["ledger"], d["result_json"])
            assert {k: v for k, v in r.raw_result.items() if k != "v1_extra"} == d["raw_result"]
        assert store.get("v1-quote").raw_result["v1_extra"] == {
            "reviewer": "kept by the migration under raw_result.v1_extra"
        }
        # the upgraded store is fully usable: indexes, tags, text search, lineage
        assert [r.id for r in store.query(RecordFilter(tag=["tiling"]))] == ["v1-tile128"]
        assert [r.id for r in store.query(RecordFilter(text="running max"))] == ["v1-quote"]
        assert [r.id for r in store.ancestors("v1-splitk")] == ["v1-tile128", "v1-base"]
        store.create([_rec(9)])
    finally:
        store.close()
    assert _sha(src) == fixture_sha  # the committed fixture itself is never written
    again = open_store(str(db))  # reopening an upgraded store is a no-op
    assert again.schema_version() == 2 and again.count(RecordFilter()) == 5
    again.close()


def test_like_fallback_without_fts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELPILOT_DB_NO_FTS", "1")
    store = open_store(str(tmp_path / "nofts.db"))
    assert isinstance(store, SQLiteStore) and not store.has_fts
    store.create(
        [
            ExperimentRecord.model_validate(
                {"id": "a", "operator": "gemm", "summary": "100% unroll_k - ok", "status": "success",
                 "description": {"why": "Fewer loop branches"}}
            ),
            ExperimentRecord.model_validate({"id": "b", "operator": "gemm", "summary": "1000 unrollk - ok",
                                             "status": "neutral"}),
        ]
    )  # fmt: skip
    assert [r.id for r in store.query(RecordFilter(text="unroll loop"))] == ["a"]
    assert [r.id for r in store.query(RecordFilter(text="%"))] == ["a"]  # literal %, not a wildcard
    assert [r.id for r in store.query(RecordFilter(text="_"))] == ["a"]
    assert [r.id for r in store.query(RecordFilter(text="UNROLL"))] == ["b", "a"]
    store.close()


def test_default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    assert default_location(ws / "sub") == str(tmp_path / "xdg" / "kernelpilot" / "experiments.db")
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_location(ws) == str(
        tmp_path / "home" / ".local" / "share" / "kernelpilot" / "experiments.db"
    )
    (ws / "kernelpilot.toml").write_text('[experiments]\ndb = "history/exp.db"\n')
    assert default_location(ws / "sub") == str(ws / "history" / "exp.db")
    (ws / "kernelpilot.toml").write_text('[experiments]\ndb = "postgresql://team@db.example/kp"\n')
    assert default_location(ws / "sub") == "postgresql://team@db.example/kp"
    monkeypatch.setenv("KERNELPILOT_DB", str(tmp_path / "env.db"))
    assert default_location(ws / "sub") == str(tmp_path / "env.db")


def test_pg_unreachable_is_typed() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreConnectionError, match="cannot connect") as info:
        open_store(f"postgresql://kp:secret@127.0.0.1:{port}/none", busy_timeout_s=2)
    assert "secret" not in info.value.message


def test_pg_locked_is_typed(pg_url: str) -> None:
    import psycopg

    url = pg_url
    store = open_store(url, busy_timeout_s=0.3)
    store.create([_rec(1)])
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE records IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreLockedError, match="locked"):
            store.create([_rec(2)])
        holder.rollback()
    assert store.create([_rec(2)]) == 1
    store.close()


def test_record_time_round_trip_sqlite_text(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "t.db"))
    t = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    store.create([ExperimentRecord.model_validate({**_rec(1).model_dump(), "created": t})])
    assert store.get("r1").created == t
    store.close()


def test_experiments_package_has_no_import_cycle() -> None:
    # every import inside the package, module level or inside a function, as a graph: it must be acyclic
    import ast
    import graphlib

    import kernelpilot.experiments as pkg

    folder = Path(pkg.__file__).parent
    graph: dict[str, set[str]] = {}
    for src in folder.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(src.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                deps |= {n.rsplit(".", 1)[-1] for n in names if n.startswith("kernelpilot.experiments.")}
        graph[src.stem] = deps & {p.stem for p in folder.glob("*.py")} - {src.stem}
    assert "sqlite_store" in graph["backends"] and "store" in graph["sqlite_store"]
    assert not graph["store"] & {"sqlite_store", "pg_store", "sqlstore", "backends"}
    list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a cycle


def _open_fresh(db: str, worker: int) -> None:
    s = open_store(db, busy_timeout_s=60)
    try:
        s.create([_rec(worker)])
    finally:
        s.close()


@pytest.mark.parametrize("attempt", range(3))
def test_sixteen_processes_open_one_fresh_store(tmp_path: Path, attempt: int) -> None:
    """16 processes open the same not-yet-existing file at once (issue 34: `database is locked` at `PRAGMA
    journal_mode = WAL`); every one must create its record and the store end whole."""
    import multiprocessing

    db = str(tmp_path / f"fresh{attempt}.db")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_open_fresh, args=(db, w)) for w in range(16)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0] * 16
    s = open_store(db)
    try:
        assert s.count(RecordFilter()) == 16 and s.schema_version() == 2
    finally:
        s.close()
