"""Root causes through the CLI (text view and --json) and the real MCP server over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "rootcause"


def test_cli_text_and_json(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    raw = str(FIX / "full" / "transpose_smem_nopad_raw.csv")
    r = run_cli("bottleneck", raw)
    assert r.code == 0 and "1. shared_bank_conflicts" in r.out and "16.5-way" in r.out
    assert len(r.out) < 2000
    r = run_cli("bottleneck", raw, "--json")
    out = tmp_path / "v.json"
    out.write_text(r.out)
    v = json.loads(r.out)["verdicts"][0]
    assert v["causes"][0]["rule"] == "shared_bank_conflicts" and v["causes"][0]["gain_pct"] > 50
    s = run_cli("suggest", "--bottleneck", str(out))
    assert s.code == 0 and "1. [HYPOTHESIS] fix_bank_conflicts" in s.out
    assert "coalesce_access" not in s.out.split("skipped:")[0]


def test_mcp_classify_then_suggest() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kernelpilot.adapters.mcp_server", "--toolsets", "profile,experiments"],
    )

    async def main() -> None:
        async with Client(params) as client:
            res = await client.call_tool(
                "classify_bottleneck",
                {
                    "profile_path": str(FIX / "roofline" / "spill_regs.csv"),
                    "isa_facts_json": (FIX / "isa" / "fit_spill_regs.json").read_text(),
                },
            )
            assert not res.is_error, res.content
            data = res.structured_content
            assert data is not None
            cause = data["verdicts"][0]["causes"][0]
            assert cause["rule"] == "local_memory" and "register spills" in cause["quantity"]
            sug = await client.call_tool("suggest_experiments", {"bottleneck": json.dumps(data)})
            assert not sug.is_error and sug.structured_content is not None
            assert sug.structured_content["suggestions"][0]["lever"] == "remove_spills"

    anyio.run(main)


def test_cli_isa_facts_from_a_file(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli(
        "bottleneck",
        str(FIX / "roofline" / "local_dyn.csv"),
        "--isa-facts-json",
        str(FIX / "isa" / "fit_local_dyn.json"),
    )
    assert r.code == 0 and "1. local_memory" in r.out and "256-byte stack frame" in r.out
