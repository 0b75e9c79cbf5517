"""The store API, run against both backends (SQLite file and a throw-away PostgreSQL server)."""

from __future__ import annotations

import json
import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.experiments import ops, render
from kernelpilot.experiments.api import (
    ExpExportRequest,
    ExpFailuresRequest,
    ExpImportRequest,
    ExpIngestRequest,
    ExpLineageRequest,
    ExpSimilarRequest,
)
from kernelpilot.experiments.backends import open_store
from kernelpilot.experiments.errors import DuplicateRecordError
from kernelpilot.experiments.record import ExperimentRecord, Status
from kernelpilot.experiments.store import RecordFilter
from kernelpilot.foundation.errors import InvalidArgumentError, NotFoundError

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "experiments"
T0 = datetime(2026, 11, 1, 12, 0, 0, 123456, tzinfo=UTC)


def rec(i: int, **kw: Any) -> ExperimentRecord:
    data: dict[str, Any] = {
        "id": f"r{i:03d}",
        "created": T0 + timedelta(minutes=i),
        "operator": "gemm",
        "dtype": "bf16",
        "arch": "sm_90",
        "gpu": "h100-sxm5",
        "summary": f"change {i} - result {i}",
        "status": "success",
        "score": 1.0 + i / 100,
    }
    data.update(kw)
    return ExperimentRecord.model_validate(data)


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    s = open_store(db_url, busy_timeout_s=5)
    yield s
    s.close()


def ids(records: list[ExperimentRecord]) -> list[str]:
    return [r.id for r in records]


def test_create_get_duplicate(store) -> None:  # type: ignore[no-untyped-def]
    r = rec(1, tags=["tiling", "tma"], raw_result={"k": {"median_us": 0.1 + 0.2, "n": 3}})
    assert store.create([r]) == 1
    got = store.get("r001")
    assert got == r
    assert got.raw_result["k"]["median_us"] == 0.30000000000000004
    with pytest.raises(DuplicateRecordError, match="r001"):
        store.create([rec(1)])
    with pytest.raises(NotFoundError, match="nope"):
        store.get("nope")
    assert store.schema_version() == 2


def test_filters(store) -> None:  # type: ignore[no-untyped-def]
    store.create(
        [
            rec(1, tags=["tiling"]),
            rec(2, dtype="fp16", status="regression", score=0.8, tags=["tiling", "tma"]),
            rec(3, operator="softmax", arch="gfx942", gpu="mi300x", summary="online softmax - 1.3x faster"),
            rec(4, status="crash", score=None, is_buggy=True, error_message="illegal memory access",
                description={"why": "out of bounds on the tail tile"}),
            rec(5, summary="unroll k loop by 4 - no gain", status="neutral", parent_id="r001"),
        ]
    )  # fmt: skip
    f = RecordFilter
    assert ids(store.query(f())) == ["r005", "r004", "r003", "r002", "r001"]
    assert ids(store.query(f(), order="oldest", limit=2, offset=1)) == ["r002", "r003"]
    assert ids(store.query(f(operator="softmax"))) == ["r003"]
    assert ids(store.query(f(dtype="fp16"))) == ["r002"]
    assert ids(store.query(f(arch="gfx942"))) == ["r003"]
    assert ids(store.query(f(gpu="mi300x"))) == ["r003"]
    assert ids(store.query(f(status=[Status.crash, Status.neutral]))) == ["r005", "r004"]
    assert ids(store.query(f(tag=["tiling"]))) == ["r002", "r001"]
    assert ids(store.query(f(tag=["tiling", "tma"]))) == ["r002"]
    assert ids(store.query(f(since=T0 + timedelta(minutes=2), until=T0 + timedelta(minutes=4)))) == [
        "r004",
        "r003",
        "r002",
    ]
    assert ids(store.query(f(text="online"))) == ["r003"]
    assert ids(store.query(f(text="UNROLL loop"))) == ["r005"]  # all words, case-insensitive
    assert ids(store.query(f(text="tail tile"))) == ["r004"]  # description.why is searched
    assert ids(store.query(f(text="illegal"))) == ["r004"]  # and the error message
    assert ids(store.query(f(text="unroll softmax"))) == []
    assert ids(store.query(f(buggy=True))) == ["r004"]
    assert ids(store.query(f(parent_id="r001"))) == ["r005"]
    assert store.count(f(operator="gemm")) == 4


def test_top_and_update(store) -> None:  # type: ignore[no-untyped-def]
    store.create(
        [
            rec(1, score=1.5),
            rec(2, score=2.5, status="incorrect", is_buggy=True, error_message="wrong"),
            rec(3, score=1.9, operator="softmax"),
            rec(4, score=1.7),
            rec(5, score=None, status="neutral"),
            rec(6, score=1.2, operator="softmax"),
        ]
    )
    assert ids(store.top(RecordFilter(), 3)) == ["r003", "r004", "r001"]
    per_op = store.top(RecordFilter(), 1, per_operator=True)
    assert [(r.operator, r.id) for r in per_op] == [("gemm", "r004"), ("softmax", "r003")]
    assert ids(store.top(RecordFilter(operator="softmax"), 5)) == ["r003", "r006"]
    text = render.table(store.top(RecordFilter(), 2))
    assert text.splitlines()[1].split()[:4] == ["1", "r003", "1.9x", "success"]

    up = store.update("r004", {"score": 3.0, "tags": ["x"], "description": {"why": "better reuse"}})
    assert up.updated is not None and up.score == 3.0
    assert store.get("r004") == up
    assert ids(store.top(RecordFilter(), 1)) == ["r004"]
    assert ids(store.query(RecordFilter(tag=["x"]))) == ["r004"]
    assert ids(store.query(RecordFilter(text="reuse"))) == ["r004"]
    with pytest.raises(InvalidArgumentError, match="summary"):
        store.update("r004", {"summary": "x" * 81})
    with pytest.raises(InvalidArgumentError, match="'id' cannot be changed"):
        store.update("r004", {"id": "r999"})
    with pytest.raises(NotFoundError):
        store.update("r999", {"score": 2.0})
    assert store.get("r004") == up  # failed updates changed nothing


def test_lineage_tree(store, db_url: str) -> None:  # type: ignore[no-untyped-def]
    store.create(
        [
            rec(1, summary="baseline - 1.0x"),
            rec(2, parent_id="r001", summary="tile 128 - 1.4x"),
            rec(3, parent_id="r002", summary="3 stages - 1.6x"),
            rec(4, parent_id="r002", summary="split-k - crash", status="crash", score=None),
            rec(5, parent_id="r003", summary="swizzle - 1.7x"),
            rec(6, summary="other root - 1.0x"),
        ]
    )
    assert ids(store.ancestors("r003")) == ["r002", "r001"]
    assert ids(store.descendants("r002")) == ["r003", "r004", "r005"]
    res = ops.lineage(ExpLineageRequest(db=db_url, id="r003"))
    assert ids(res.ancestors) == ["r002", "r001"] and ids(res.descendants) == ["r005"]
    tree = ops.lineage(ExpLineageRequest(db=db_url, id="r002")).render_text().splitlines()
    assert tree[0] == "lineage of r002: 1 ancestor(s), 3 descendant(s)"
    assert tree[1].startswith("r001 [success 1.01x] baseline")
    assert tree[2].startswith("└─ * r002 ")
    assert tree[3].startswith("   ├─ r003 ") and tree[4].startswith("   │  └─ r005 ")
    assert tree[5].startswith("   └─ r004 [crash -] split-k - crash")


def test_similar_and_failures(store, db_url: str) -> None:  # type: ignore[no-untyped-def]
    store.create(
        [
            rec(1, summary="unroll k loop by 4 - 0.9x, register spills", status="regression", score=0.9,
                description={"why": "unrolling pushed registers to 255, spills"}),
            rec(2, summary="unroll k loop by 2 - 1.1x", score=1.1),
            rec(3, operator="softmax", dtype="fp16", arch="gfx942", summary="unroll k loop by 4 - crash",
                status="crash", score=None, is_buggy=True, error_message="LDS overflow"),
            rec(4, summary="tma multicast - 1.3x"),
            rec(5, summary="vectorize loads - abandoned, no time", status="abandoned", score=None),
        ]
    )  # fmt: skip
    res = ops.similar(
        ExpSimilarRequest(
            db=db_url, operator="gemm", dtype="bf16", arch="sm_90", change="unroll the k loop by 4"
        )
    )
    assert ids([m.record for m in res.matches])[:4] == ["r001", "r002", "r005", "r004"]  # ties: newest first
    top = res.matches[0]
    assert top.similarity == 1.0 and top.components == {
        "operator": 1.0,
        "dtype": 1.0,
        "arch": 1.0,
        "change": 1.0,
    }
    # stop words dropped: {unroll, k, loop, 4} vs {unroll, k, loop, 2}: Jaccard 3/5
    assert res.matches[1].components["change"] == pytest.approx(3 / 5)
    assert res.matches[1].similarity == pytest.approx(0.30 + 0.15 + 0.15 + 0.40 * 3 / 5, abs=1e-4)
    # change words alone find the softmax crash too
    res2 = ops.similar(ExpSimilarRequest(db=db_url, change="unroll k loop by 4", failures_only=True))
    assert ids([m.record for m in res2.matches]) == ["r003", "r001"]
    assert "LDS overflow" in res2.render_text()

    f = ops.failures(ExpFailuresRequest(db=db_url))
    assert ids(f.records) == ["r005", "r003", "r001"]
    text = f.render_text()
    assert "why: unrolling pushed registers to 255, spills" in text
    assert "why: LDS overflow" in text
    assert "why: abandoned, no time" in text
    f2 = ops.failures(ExpFailuresRequest(db=db_url, operator="gemm", include_neutral=False, limit=1))
    assert ids(f2.records) == ["r005"] and f2.total == 2


HOSTILE = [
    "'; DROP TABLE records; --",
    'Robert"); DELETE FROM tags;--',
    "100% _wild_ \\ backslash \\% \\_",
    "ünïcödé café — 日本語 🚀 \u202e rtl",
    "tab\tand\r\nnewline",
    "$$ $1 %s %(x)s ? :name {}",
    "' OR '1'='1",
]


def _hostile_record(i: int, h: str) -> ExperimentRecord:
    one_line = " ".join(h.split())[:60]
    return ExperimentRecord.model_validate(
        {
            "id": f"h{i}",
            "parent_id": "h-parent",
            "created": T0 + timedelta(seconds=i),
            "operator": h,
            "dtype": h,
            "shapes": {h: [1, 2], "M": 7},
            "gpu": h,
            "arch": h,
            "environment": {"driver": h, "toolkit": h, "libraries": {h: h}, "other": {"x": h}},
            "base_commit": h,
            "diff_hash": h,
            "summary": f"{one_line} - {i}",
            "description": {"approach": h, "result": h, "why": h, "insight": h},
            "raw_result": {h: [h, 1.5, {"nested": h}]},
            "score": 1.25,
            "status": "crash",
            "is_buggy": True,
            "error_message": h,
            "profiling": {
                "verdicts": [
                    {
                        "kernel": h,
                        "verdict": "memory_bound",
                        "memory_level": "dram",
                        "confidence": 0.5,
                        "evidence": [{"metric": h, "value": h, "threshold": h, "source": h}],
                        "next_measurements": [h],
                    }
                ],
                "key_metrics": {h: h},
            },
            "tags": [" ".join(h.split())[:64]],
            "links": {"workspace": h, "ledger": h, "result_json": h, "files": [h]},
        }
    )


def test_hostile_strings_round_trip(store) -> None:  # type: ignore[no-untyped-def]
    records = [_hostile_record(i, h) for i, h in enumerate(HOSTILE)]
    store.create(records)
    for r in records:
        assert store.get(r.id) == r
        assert ids(store.query(RecordFilter(operator=r.operator))) == [r.id]
        assert ids(store.query(RecordFilter(tag=r.tags))) == [r.id]
    assert store.count(RecordFilter()) == len(HOSTILE)
    # punctuation-only searches are substring matches with LIKE wildcards escaped
    assert ids(store.query(RecordFilter(text="'"))) == ["h6", "h0"]
    assert ids(store.query(RecordFilter(text="';"))) == ["h0"]
    assert ids(store.query(RecordFilter(text="%"))) == ["h5", "h2"]
    assert ids(store.query(RecordFilter(text="_"))) == ["h2"]
    assert ids(store.query(RecordFilter(text="日本語"))) == ["h3"]
    upd = store.update("h0", {"description": {"why": HOSTILE[1]}})
    assert store.get("h0") == upd


def test_export_import_round_trip(store, db_url: str, second_db_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    records = [
        rec(i, score=1 / 3 + i, raw_result={"x": 1e-300 * i, "y": [0.1, 2.5e17]}) for i in range(1, 30)
    ]
    records += [_hostile_record(i, h) for i, h in enumerate(HOSTILE)]
    records.append(
        rec(99, created=datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC), score=None, status="abandoned")
    )
    store.create(records)
    store.update("r005", {"status": "regression"})
    out = tmp_path / "export.jsonl"
    res = ops.export_records(ExpExportRequest(db=db_url, out=str(out)))
    assert res.count == len(records)
    # into an empty store of each backend: identical records, identical export bytes
    target = second_db_url
    imp = ops.import_records(ExpImportRequest(db=target, path=str(out)))
    assert (imp.read, imp.imported, imp.skipped) == (len(records), len(records), 0)
    copy = open_store(target)
    try:
        original = list(store.iter_all())
        copied = list(copy.iter_all())
    finally:
        copy.close()
    assert copied == original
    assert [r.model_dump_json() for r in copied] == [r.model_dump_json() for r in original]
    out2 = tmp_path / "export2.jsonl"
    ops.export_records(ExpExportRequest(db=target, out=str(out2)))
    assert out2.read_bytes() == out.read_bytes()
    # importing again: conflict is an error by default (nothing written), or skipped
    with pytest.raises(DuplicateRecordError):
        ops.import_records(ExpImportRequest(db=target, path=str(out)))
    again = ops.import_records(ExpImportRequest(db=target, path=str(out), on_conflict="skip"))
    assert (again.imported, again.skipped) == (0, len(records))
    line = json.loads(out.read_text().splitlines()[0])
    assert line["created"] == "2026-11-01T12:00:00Z"


def test_ingest_eval_results(db_url: str, tmp_path: Path) -> None:
    res = ops.ingest(
        ExpIngestRequest(
            db=db_url, path=str(FIX / "ledger.jsonl"), operator="softmax", dtype="fp16", arch="sm_90",
            change="online softmax", workspace=str(FIX),
        )
    )  # fmt: skip
    assert len(res.created) == 8 and res.existing == []
    by_status = {r.raw_result["eval_status"]: r for r in res.records}
    expect = {
        "improved": ("success", 1.4137, False),
        "regressed": ("regression", 0.8125, False),
        "neutral": ("neutral", 1.003, False),
        "unstable": ("neutral", 1.02, False),
        "failed": ("crash", None, True),
        "correctness_failed": ("incorrect", 1.9, True),
        "out_of_scope": ("abandoned", None, False),
        "needs_baseline": ("neutral", None, False),
    }
    for ev_status, (status, score, buggy) in expect.items():
        r = by_status[ev_status]
        assert (r.status.value, r.score, r.is_buggy) == (status, score, buggy), ev_status
    imp = by_status["improved"]
    assert imp.summary == "online softmax - improved 1.41x"
    assert imp.gpu == "NVIDIA H100 80GB HBM3" and imp.environment.driver == "580.159.04"
    assert imp.environment.toolkit == "13.0" and imp.environment.libraries == {
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
    }
    assert imp.links.ledger == "ledger.jsonl#L1" and imp.links.files == ["kernel.py"]
    assert imp.created == datetime(2026, 11, 20, 14, 3, 11, 250113, tzinfo=UTC)
    assert imp.base_commit == "a1b2c3d" and imp.diff_hash == "sha256:5e1f0c9a"
    assert imp.raw_result["samples"] == [73.1, 73.225, 73.4]
    failed = by_status["failed"]
    assert failed.summary == "online softmax - failed: CompilationError: shared memory 262144 exceeds limit"
    assert "shared memory 262144 exceeds limit" in (failed.error_message or "")
    assert "unstable" in by_status["unstable"].tags and "out_of_scope" in by_status["out_of_scope"].tags
    # same ledger again: nothing new; one line and the result.json
    again = ops.ingest(
        ExpIngestRequest(db=db_url, path=str(FIX / "ledger.jsonl"), line=2, operator="softmax")
    )
    assert again.created == [] and len(again.existing) == 1
    one = ops.ingest(ExpIngestRequest(db=db_url, path=str(FIX / "result_improved.json"), workspace=str(FIX)))
    r = one.records[0]
    assert (
        one.created == [r.id]
        and r.operator == "softmax-fp16"
        and r.links.result_json == "result_improved.json"
    )
    assert r.summary == "eval softmax-fp16 - improved 1.41x"


def _writer(db: str, worker: int, n: int) -> None:
    s = open_store(db, busy_timeout_s=60)
    try:
        for i in range(n):
            s.create([rec(0, id=f"w{worker}-{i:04d}", created=T0 + timedelta(microseconds=worker * n + i))])
    finally:
        s.close()


@pytest.mark.slow
def test_concurrent_writers(db_url: str) -> None:
    """8 processes x 500 single-record transactions into one (fresh) store: exactly 4,000, all intact."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(db_url, w, 500)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [p.exitcode for p in procs] == [0] * 8
    s = open_store(db_url)
    try:
        assert s.count(RecordFilter()) == 4000
        every = list(s.iter_all())  # each doc re-validated: none corrupt
        assert len({r.id for r in every}) == 4000
        assert all(r.summary == "change 0 - result 0" for r in every)
        if db_url.endswith(".db"):
            import sqlite3

            conn = sqlite3.connect(db_url)
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            conn.close()
    finally:
        s.close()
