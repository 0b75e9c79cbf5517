"""The same acceptance flow through the real MCP server over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

KERNEL = Path(__file__).resolve().parent.parent / "fixtures" / "workspace" / "vector_add.cu"


def _server(env_root: Path) -> StdioServerParameters:
    env = dict(os.environ)
    env["KERNELPILOT_WORKSPACES"] = str(env_root)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "kernelpilot.adapters.mcp_server", "--toolsets", "workspace"],
        env=env,
    )


async def _call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    res = await client.call_tool(tool, args)
    assert not res.is_error, res.content
    assert res.structured_content is not None
    return res.structured_content


async def _error(client: Client, tool: str, **args: Any) -> str:
    res = await client.call_tool(tool, args)
    assert res.is_error
    return " ".join(getattr(c, "text", "") for c in res.content)


def test_mcp_init_iterations_mask_summary_restart(tmp_path):
    root = tmp_path / "root"

    async def main() -> None:
        async with Client(_server(root)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {
                "init_workspace",
                "memory_create",
                "memory_read",
                "memory_update",
                "memory_mask",
                "memory_unmask",
                "memory_summary",
                "memory_restart",
                "render_report",
                "write_plan",
            } <= tools
            out = await _call(
                client,
                "init_workspace",
                name="vadd",
                kernel=str(KERNEL),
                platform="H100",
                framework="cuda",
                dtype="fp32",
                shape=["N=1024"],
                allow_tbd=True,
            )
            ws = Path(out["workspace"])
            assert ws == root / "vadd" and (ws / "README.md").is_file()
            kernel = ws / "vector_add.cu"
            kernels = {}
            for v, (change, median) in enumerate(
                [("baseline", 100.0), ("float4 loads", 80.0), ("grid-stride", 90.0), ("unroll", 85.0)]
            ):
                kernel.write_text(kernel.read_text() + f"// v{v}\n")
                kernels[v] = kernel.read_text()
                rec = await _call(
                    client,
                    "memory_create",
                    workspace="vadd",
                    change=change,
                    median=median,
                    correct=True,
                    verdict="memory_bound",
                )
                assert rec["path"] == f"memory/v{v}.json"
            await _call(client, "memory_mask", workspace="vadd", version=2)
            summary = await _call(client, "memory_summary", workspace="vadd")
            assert [e["version"] for e in summary["entries"]] == [0, 1, 3]
            assert summary["masked_versions"] == [2] and summary["best_version"] == 1
            msg = await _error(client, "memory_read", workspace="vadd", version=2)
            assert "masked" in msg
            res = await _call(client, "memory_restart", workspace="vadd", from_version=2)
            assert res["restored_version"] == 1 and res["masked"] == [3]
            assert kernel.read_text() == kernels[1]
            latest = await _call(client, "memory_read", workspace=str(ws))
            assert latest["record"]["version"] == 1
            rep = await _call(client, "render_report", workspace="vadd")
            assert rep["versions"] == [0, 1] and (ws / rep["html"]).is_file()
            # bad input comes back as a tool error, the server stays up
            msg = await _error(
                client, "init_workspace", name="../x", kernel=str(KERNEL), platform="H100", framework="cuda"
            )
            assert "WorkspaceNameError" in msg
            kernel.write_text("dirty\n")
            msg = await _error(client, "memory_restart", workspace="vadd", from_version=1)
            assert "DirtyTreeError" in msg
            (ws / "memory" / "v1.json").write_text(json.dumps({"version": 1}))
            msg = await _error(client, "memory_summary", workspace="vadd")
            assert "MemorySchemaError" in msg and "schema_version" in msg

    anyio.run(main)
