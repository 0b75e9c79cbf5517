"""`kernelpilot exp ...` through the real CLI, and the exp_* tools through a real MCP client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "experiments"


def test_cli_workflow(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "exp.db")
    r = run_cli(
        "exp", "create", "--db", db, "--id", "base", "--operator", "gemm", "--dtype", "bf16",
        "--arch", "sm_90", "--summary", "baseline - 1.0x reference", "--status", "neutral", "--score", "1.0",
        "--shapes", '{"M": 4096, "N": 4096}', "--environment", '{"driver": "580.159.04", "toolkit": "13.0"}',
        "--tags", "baseline",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == f"created base in {db}"
    r = run_cli(
        "exp", "create", "--db", db, "--id", "t128", "--parent-id", "base", "--operator", "gemm",
        "--dtype", "bf16", "--arch", "sm_90", "--summary", "tile 128x128 - 1.6x", "--status", "success",
        "--score", "1.6",
        "--why", "better reuse in shared memory", "--tags", "tiling",
    )  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli(
        "exp", "create", "--db", db, "--id", "unroll8", "--parent-id", "t128", "--operator", "gemm",
        "--summary", "unroll k by 8 - 0.7x, spills", "--status", "regression", "--score", "0.7",
        "--why", "255 registers, local memory spills",
    )  # fmt: skip
    assert r.code == 0, r.err

    r = run_cli("exp", "top", "--db", db, "--limit", "2")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[2].split()[:4] == ["1", "t128", "1.6x", "success"]
    assert lines[3].split()[:4] == ["2", "base", "1x", "neutral"]

    r = run_cli("exp", "list", "--db", db, "--status", "regression", "--status", "success")
    assert r.code == 0 and r.out.splitlines()[0] == "2 record(s) match; showing 1-2"

    r = run_cli("exp", "lineage", "--db", db, "t128")
    assert r.code == 0
    assert r.out.splitlines()[1:] == [
        "base [neutral 1x] baseline - 1.0x reference",
        "└─ * t128 [success 1.6x] tile 128x128 - 1.6x",
        "   └─ unroll8 [regression 0.7x] unroll k by 8 - 0.7x, spills",
    ]
    r = run_cli("exp", "failures", "--db", db)
    assert "why: 255 registers, local memory spills" in r.out and "t128" not in r.out

    r = run_cli("exp", "similar", "--db", db, "--operator", "gemm", "--change", "unroll k by 4")
    assert r.code == 0 and r.out.splitlines()[1].split()[1] == "unroll8"

    r = run_cli("exp", "update", "--db", db, "unroll8", "--status", "incorrect", "--is-buggy",
                "--error-message", "max rel err 0.4", "--add-tag", "unroll")  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli("--json", "exp", "get", "--db", db, "unroll8")
    data = json.loads(r.out)
    rec = data["record"]
    assert (rec["status"], rec["is_buggy"], rec["tags"]) == ("incorrect", True, ["unroll"])
    assert rec["updated"] is not None

    out = tmp_path / "all.jsonl"
    r = run_cli("exp", "export", "--db", db, str(out))
    assert r.code == 0 and r.out.strip() == f"exported 3 record(s) to {out}"
    db2 = str(tmp_path / "copy.db")
    r = run_cli("exp", "import", "--db", db2, str(out))
    assert r.code == 0 and "imported 3, skipped 0" in r.out
    out2 = tmp_path / "again.jsonl"
    run_cli("exp", "export", "--db", db2, str(out2))
    assert out2.read_bytes() == out.read_bytes()

    r = run_cli("exp", "ingest", "--db", db, str(FIX / "ledger.jsonl"), "--line", "3",
                "--operator", "softmax", "--change", "bigger tile")  # fmt: skip
    assert r.code == 0, r.err
    assert "bigger tile - failed: CompilationError" in r.out


def test_cli_default_db_from_env(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KERNELPILOT_DB", str(tmp_path / "env.db"))
    r = run_cli("exp", "create", "--operator", "gemm", "--summary", "a - b", "--status", "neutral")
    assert r.code == 0 and (tmp_path / "env.db").exists()


def test_cli_bad_input(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "exp.db")
    r = run_cli("exp", "create", "--db", db, "--operator", "gemm", "--summary", "x" * 90 + " - y", "--status",
                "success")  # fmt: skip
    assert r.code == 2 and "summary: " in r.err and "at most 80" in r.err
    r = run_cli("exp", "create", "--db", db, "--operator", "gemm", "--summary", "a - b", "--status", "great")
    assert r.code == 2 and "--status" in r.err
    r = run_cli("exp", "create", "--db", db, "--operator", "gemm", "--summary", "a - b", "--status", "crash",
                "--is-buggy")  # fmt: skip
    assert r.code == 2 and "error_message: required when is_buggy" in r.err
    r = run_cli("exp", "list", "--db", db, "--since", "last tuesday")
    assert r.code == 2 and "--since" in r.err
    r = run_cli("exp", "get", "--db", db, "missing")
    assert r.code == 1 and "no experiment record with id 'missing'" in r.err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"operator": "gemm", "summary": "a - b", "status": "success"}\n{"operator": "gemm"}\n')
    r = run_cli("exp", "import", "--db", db, str(bad))
    assert r.code == 2 and f"{bad}:2" in r.err and "summary: is missing" in r.err
    r = run_cli("exp", "list", "--db", db)
    assert "(no records)" in r.out  # the import was all-or-nothing

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x13\x37" * 512)
    r = run_cli("exp", "list", "--db", str(junk))
    assert r.code == 1 and "not an SQLite database" in r.err and "fix:" in r.err
    assert junk.read_bytes() == b"\x13\x37" * 512
    r = run_cli("exp", "ingest", "--db", db, str(FIX / "store_v1.db"))
    assert r.code == 1 and "not UTF-8" in r.err


def test_mcp_tools(tmp_path: Path) -> None:
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    db = str(tmp_path / "exp.db")

    async def main() -> None:
        async with Client(build_server("experiments")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            expected = {"exp_create", "exp_update", "exp_get", "exp_list", "exp_top", "exp_similar",
                        "exp_lineage", "exp_failures", "exp_import", "exp_export", "exp_ingest"}  # fmt: skip
            assert expected <= names
            res = await client.call_tool(
                "exp_create",
                {"db": db, "id": "m1", "operator": "gemm", "summary": "tma - 1.2x", "status": "success",
                 "score": 1.2, "tags": ["tma"], "profiling": {"verdicts": [{"kernel": "k", "verdict":
                 "memory_bound", "memory_level": "dram", "confidence": 0.8}]}},
            )  # fmt: skip
            assert not res.is_error, res
            assert res.structured_content["record"]["profiling"]["verdicts"][0]["verdict"] == "memory_bound"
            res = await client.call_tool("exp_top", {"db": db, "limit": 5})
            assert [r["id"] for r in res.structured_content["records"]] == ["m1"]
            res = await client.call_tool("exp_create", {"db": db, "operator": "gemm", "summary": "no dash",
                                                        "status": "success"})  # fmt: skip
            assert res.is_error and "summary: " in res.content[0].text
            res = await client.call_tool("exp_get", {"db": db, "id": "zzz"})
            assert res.is_error and "NotFoundError" in res.content[0].text

    anyio.run(main)
