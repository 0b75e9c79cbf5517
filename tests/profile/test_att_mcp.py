"""`profile_att` through the official MCP client (in-process server) returns the CLI's `--json` model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile"
BIG = FIX / "att" / "big" / "ui_output_agent_38430_dispatch_44"
TRACE = FIX / "rocprofv3" / "discover_kernel_trace.csv"


def _call(name: str, args: dict[str, Any]) -> Any:
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    async def go() -> Any:
        async with Client(build_server("profile")) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert name in tools
            return await client.call_tool(name, args)

    return anyio.run(go)


def test_profile_att_mcp_equals_cli_json(run_cli) -> None:
    args = {"path": str(BIG), "top": 5, "kernel_trace": str(TRACE), "arch": "gfx950"}
    got = _call("profile_att", args)
    assert not got.is_error
    cli = run_cli(
        "--json", "profile", "att", str(BIG), "--top", "5", "--kernel-trace", str(TRACE), "--arch", "gfx950"
    )
    assert cli.code == 0, cli.err
    want = json.loads(cli.out)
    answer = got.structured_content
    # the answer is sized for an agent's context: a cut digest keeps the top rows, the file holds every one
    whole = answer.get("full_result_path")
    full = json.loads(Path(whole).read_text()) if whole else {k: v for k, v in answer.items() if k in want}
    assert full == want
    assert answer["totals"] == want["totals"]
    assert answer["hotspots_by_stall"][:2] == want["hotspots_by_stall"][:2]
    assert want["totals"]["stall_cycles"] == 1677652 and want["registers"]["waves_per_simd"] == 2
    assert [h["address"] for h in want["hotspots_by_stall"]] == [11448, 15492, 11664, 15672, 7284]


def test_profile_att_mcp_bad_folder_is_tool_error(tmp_path: Path) -> None:
    got = _call("profile_att", {"path": str(tmp_path)})
    assert got.is_error
    text = " ".join(getattr(c, "text", "") for c in got.content)
    assert "not an ATT dispatch folder" in text and "Traceback" not in text
