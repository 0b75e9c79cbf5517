"""Issue 41: hostile store paths and old or damaged stores.

- a FIFO, socket, directory, dangling link or symlink loop given as the database (or sitting where SQLite
  puts its journal) is refused before SQLite opens it, and left as it was;
- `exp upgrade` on v1 stores holding one odd record or schema value is a typed refusal that leaves the
  original byte-for-byte as it was (no journal-mode change) and no backup behind;
- the backup never lands where a dangling link at `<db>.v1.bak` points;
- one invalid stored record is named (with its id) and left out of every read of the others.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest

from kernelpilot.experiments import ops
from kernelpilot.experiments.api import (
    ExpExportRequest,
    ExpFailuresRequest,
    ExpGetRequest,
    ExpLineageRequest,
    ExpListRequest,
    ExpSimilarRequest,
    ExpTopRequest,
    ExpUpdateRequest,
    ExpUpgradeRequest,
)
from kernelpilot.experiments.backends import open_store
from kernelpilot.experiments.errors import StoreCorruptError
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.foundation.errors import NotFoundError, StoreError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "experiments" / "store_v1.db"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _entry(p: Path) -> tuple[int, str]:
    """What a path is, without following a link: (mode, link target or '')."""
    st = os.lstat(p)
    return st.st_mode, os.readlink(p) if os.path.islink(p) else ""


def _hostile(tmp_path: Path, kind: str) -> Path:
    p = tmp_path / f"{kind}.db"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "directory":
        p.mkdir()
    elif kind == "dangling":
        p.symlink_to(tmp_path / "elsewhere" / "target.db")
    elif kind == "loop":
        p.symlink_to(p)
    elif kind == "link_to_fifo":
        os.mkfifo(tmp_path / "real_fifo")
        p.symlink_to(tmp_path / "real_fifo")
    return p


@pytest.mark.parametrize("kind", ["fifo", "socket", "directory", "dangling", "loop", "link_to_fifo"])
@pytest.mark.parametrize("op", ["open", "upgrade"])
def test_non_regular_database_refused_untouched(tmp_path: Path, kind: str, op: str) -> None:
    db = _hostile(tmp_path, kind)
    before = _entry(db)
    listing = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(StoreError) as info:  # a FIFO used to block here for ever
        if op == "open":
            open_store(str(db))
        else:
            ops.upgrade(ExpUpgradeRequest(db=str(db)))
    assert str(db) in info.value.message and info.value.hint
    assert _entry(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert not (tmp_path / "elsewhere").exists()  # nothing created through the dangling link


def test_fifo_where_sqlite_puts_its_journal_refused(tmp_path: Path) -> None:
    db = tmp_path / "exp.db"
    open_store(str(db)).close()
    os.mkfifo(tmp_path / "exp.db-wal")
    with pytest.raises(StoreCorruptError, match=r"journal file .*not a regular file"):
        open_store(str(db))


def _v1_copy(tmp_path: Path) -> Path:
    db = tmp_path / "old.db"
    shutil.copy(FIX, db)
    return db


def _first_doc() -> dict[str, object]:
    conn = sqlite3.connect(FIX)
    try:
        doc: dict[str, object] = json.loads(conn.execute("SELECT doc FROM experiments LIMIT 1").fetchone()[0])
        return doc
    finally:
        conn.close()


def _edit(db: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    conn.execute(sql, params)
    conn.commit()
    conn.close()


_ODD_DOCS = {
    "list": "[1, 2]",
    "number": "5",
    "deep": "[" * 100_000 + "]" * 100_000,
    "raw_result_list": {"raw_result": [1, 2]},
    "raw_result_text": {"raw_result": "abc"},
    "tags_text": {"tags": "abc"},
    "id_null": {"id": None},
    "nan_score": '{"id": "x", "score": NaN}',
    "duplicate_id": {"id": "v1-quote"},
    "blob": b"\xff\xfe\x00",
}


@pytest.mark.parametrize("case", sorted(_ODD_DOCS))
def test_upgrade_of_an_odd_v1_record_is_refused_untouched(tmp_path: Path, case: str) -> None:
    db = _v1_copy(tmp_path)
    odd = _ODD_DOCS[case]
    doc = json.dumps({**_first_doc(), **odd}) if isinstance(odd, dict) else odd
    _edit(db, "UPDATE experiments SET doc = ? WHERE rowid = (SELECT MIN(rowid) FROM experiments)", doc)
    before = _sha(db)
    with pytest.raises(StoreCorruptError) as info:
        ops.upgrade(ExpUpgradeRequest(db=str(db)))
    assert "record" in info.value.message and info.value.hint
    assert _sha(db) == before  # not even the journal mode changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]  # the unused backup is gone too


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE schema_version SET version = 'abc'",
        "UPDATE schema_version SET version = -1",
        "UPDATE schema_version SET version = 0",
        "UPDATE schema_version SET version = 1.5",
        "UPDATE schema_version SET version = X'00'",
        "DELETE FROM schema_version",
    ],
    ids=["text", "negative", "zero", "fraction", "blob", "empty"],
)
def test_upgrade_of_an_odd_schema_version_is_refused_untouched(tmp_path: Path, sql: str) -> None:
    db = _v1_copy(tmp_path)
    _edit(db, sql)
    before = _sha(db)
    with pytest.raises(StoreCorruptError, match="schema_version table holds"):
        ops.upgrade(ExpUpgradeRequest(db=str(db)))
    assert _sha(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]


def test_upgrade_backup_never_follows_a_dangling_link(tmp_path: Path) -> None:
    db = _v1_copy(tmp_path)
    target = tmp_path / "elsewhere.db"
    (tmp_path / "old.db.v1.bak").symlink_to(target)
    up = ops.upgrade(ExpUpgradeRequest(db=str(db)))
    assert up.backup == str(tmp_path / "old.db.v1.2.bak")
    assert not target.exists()
    assert os.readlink(tmp_path / "old.db.v1.bak") == str(target)
    kept = sqlite3.connect(tmp_path / "old.db.v1.2.bak")
    assert kept.execute("SELECT version FROM schema_version").fetchone()[0] == 1
    kept.close()


def _store_with_one_bad_record(tmp_path: Path) -> Path:
    db = tmp_path / "exp.db"
    store = open_store(str(db))
    recs = [
        ExperimentRecord.model_validate(
            {
                "id": f"r{i}",
                "parent_id": "r1" if i > 1 else None,
                "operator": "gemm",
                "arch": "sm_90",
                "summary": f"tile {i} - faster",
                "status": "success" if i != 3 else "regression",
                "score": 1.0 + i / 10,
            }
        )
        for i in range(1, 5)
    ]
    store.create(recs)
    store.close()
    # r2's document edited by hand: the score is a string no record accepts
    bad = json.loads(recs[1].model_dump_json())
    bad["score"] = "fast"
    _edit(db, "UPDATE records SET doc = ? WHERE id = 'r2'", json.dumps(bad))
    return db


def test_one_invalid_stored_record_is_named_and_skipped(tmp_path: Path) -> None:
    db = str(_store_with_one_bad_record(tmp_path))
    listed = ops.list_records(ExpListRequest(db=db))
    assert [r.id for r in listed.records] == ["r4", "r3", "r1"]
    assert len(listed.unreadable) == 1 and listed.unreadable[0].startswith("r2: invalid record (score")
    assert "r2: invalid record" in listed.render_text()
    top = ops.top(ExpTopRequest(db=db))
    assert [r.id for r in top.records] == ["r4", "r3", "r1"] and top.unreadable == listed.unreadable
    sim = ops.similar(ExpSimilarRequest(db=db, operator="gemm"))
    assert {m.record.id for m in sim.matches} == {"r1", "r3", "r4"} and sim.unreadable == listed.unreadable
    fails = ops.failures(ExpFailuresRequest(db=db))
    assert [r.id for r in fails.records] == ["r3"]
    lin = ops.lineage(ExpLineageRequest(db=db, id="r1"))
    assert [r.id for r in lin.descendants] == ["r3", "r4"] and lin.unreadable == listed.unreadable
    out = tmp_path / "export.jsonl"
    exported = ops.export_records(ExpExportRequest(db=db, out=str(out)))
    assert exported.count == 3 and exported.unreadable == listed.unreadable
    assert [json.loads(ln)["id"] for ln in out.read_text().splitlines()] == ["r1", "r3", "r4"]
    assert ops.get(ExpGetRequest(db=db, id="r4")).record.score == pytest.approx(1.4)
    for call in (
        lambda: ops.get(ExpGetRequest(db=db, id="r2")),
        lambda: ops.update(ExpUpdateRequest(db=db, id="r2", why="retry")),
    ):
        with pytest.raises(StoreCorruptError, match="r2: invalid record") as info:
            call()
        assert "exp export" in info.value.hint


def test_stored_text_that_is_not_utf8_fails_that_record_only(tmp_path: Path) -> None:
    db = _store_with_one_bad_record(tmp_path)
    _edit(db, "UPDATE records SET doc = CAST(? AS TEXT) WHERE id = 'r3'", b'{"id": "r3\xff"}')
    listed = ops.list_records(ExpListRequest(db=str(db)))
    assert [r.id for r in listed.records] == ["r4", "r1"]
    assert sorted(u.split(":")[0] for u in listed.unreadable) == ["r2", "r3"]


def test_a_given_store_in_a_missing_folder_is_refused_the_default_folder_is_made(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        open_store(str(tmp_path / "no_such_folder" / "exp.db"))
    assert not (tmp_path / "no_such_folder").exists()
    store = open_store()  # the default location (conftest: $XDG_DATA_HOME under tmp_path): folders made
    assert store.url == str(tmp_path / "xdg" / "kernelpilot" / "experiments.db")
    store.close()


def test_a_failed_command_removes_the_store_it_created(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with pytest.raises(NotFoundError):
        ops.update(ExpUpdateRequest(db=str(db), id="r1", why="retry"))
    assert not db.exists() and not list(tmp_path.glob("new.db*"))
    assert ops.list_records(ExpListRequest(db=str(db))).records == []  # a read creates the empty store
    assert db.exists()


def test_upgrade_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no experiment store"):
        ops.upgrade(ExpUpgradeRequest(db=str(tmp_path / "typo.db")))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_failed_sweep_report_leaves_no_store_behind(tmp_path: Path) -> None:
    from kernelpilot.sweep.models import SweepReportRequest
    from kernelpilot.sweep.report import sweep_report

    with pytest.raises(NotFoundError, match="no sweep"):
        sweep_report(SweepReportRequest(id="x", db=str(tmp_path / "exp.db")))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "text", ["[experiments]\ndb = ", "x = " + "[" * 5000 + "]" * 5000, "n = " + "9" * 5000]
)
def test_workspace_setting_is_read_with_the_limits(tmp_path: Path, text: str) -> None:
    from kernelpilot.experiments.store import default_location
    from kernelpilot.foundation.readers import ReaderError

    (tmp_path / "kernelpilot.toml").write_text(text)
    with pytest.raises(ReaderError, match=r"kernelpilot\.toml"):
        default_location(tmp_path)
