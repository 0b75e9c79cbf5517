"""Long tools stream progress notifications through the MCP adapter (in-process server, real client)."""

import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer

from kernelpilot.adapters.mcp_server import _make_tool
from kernelpilot.capabilities import Capability
from kernelpilot.host.doctor import DoctorRequest, DoctorResult


def test_progress_reaches_the_client():
    sys.path.insert(0, str(Path(__file__).parent))
    cap = Capability(
        tool="slow_tool",
        command=("slow",),
        summary="slow",
        description="A test tool that reports progress three times before returning.",
        request=DoctorRequest,
        result=DoctorResult,
        target="_slowcap:slow_with_progress",
        long_running=True,
        takes_progress=True,
    )
    server = MCPServer(name="t", tools=[_make_tool(cap)])
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main():
        async with Client(server) as client:
            res = await client.call_tool("slow_tool", {"probe_gpus": False}, progress_callback=on_progress)
            assert not res.is_error

    anyio.run(main)
    assert [s[0] for s in seen] == [1, 2, 3]
    assert seen[-1][1] == 3 and seen[-1][2] == "step 3"
