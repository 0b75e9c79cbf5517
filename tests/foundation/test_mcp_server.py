"""The MCP server through the official `mcp` Python client, over stdio and streamable HTTP."""

import socket
import subprocess
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tests.waiting import wait_until

SERVER = StdioServerParameters(command=sys.executable, args=["-m", "kernelpilot.adapters.mcp_server"])


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_stdio_initialize_list_call_and_survive_bad_calls(tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())

    async def main():
        async with Client(SERVER) as client:
            tools = (await client.list_tools()).tools
            names = {t.name for t in tools}
            assert "doctor" in names
            for tool in tools:
                assert tool.description and len(tool.description) > 40, tool.name
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None, f"{tool.name} has no structured output"

            ok = await client.call_tool("doctor", {"probe_gpus": False})
            assert not ok.is_error
            assert {t["name"] for t in ok.structured_content["tools"]} >= {"ncu", "nvdisasm", "llvm-objdump"}

            bad_type = await client.call_tool("doctor", {"probe_gpus": "not-a-bool"})
            assert bad_type.is_error and "probe_gpus" in _text(bad_type)

            extra = await client.call_tool("doctor", {"no_such_argument": 1})
            assert extra.is_error and "no_such_argument" in _text(extra)

            unknown = await client.call_tool("no_such_tool", {})
            assert unknown.is_error and "no_such_tool" in _text(unknown)

            # The server is still serving after every bad call.
            again = await client.call_tool("doctor", {"probe_gpus": False})
            assert not again.is_error

    anyio.run(main)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_resources_are_listed_and_read_only():
    from kernelpilot.foundation.paths import bundled_dir

    for d in ("gpu-wiki-index", "playbooks"):  # both ship with the package: their absence fails
        assert any(bundled_dir(d).rglob("*.md")), f"no bundled {d} files in this checkout"

    async def main():
        async with Client(SERVER) as client:
            resources = (await client.list_resources()).resources
            uris = [str(r.uri) for r in resources]
            wiki = [u for u in uris if u.startswith("kernelpilot://wiki/")]
            playbooks = [u for u in uris if u.startswith("kernelpilot://playbooks/")]
            assert wiki or playbooks
            first = (wiki or playbooks)[0]
            content = await client.read_resource(first)
            assert content.contents and content.contents[0].text.strip()
            with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own protocol error type
                await client.read_resource("kernelpilot://wiki/../../pyproject.toml")

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_transport():
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelpilot.adapters.mcp_server",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def listening() -> bool:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"HTTP server exited {proc.returncode}: {err}")
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, "the HTTP server to listen")

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert "doctor" in names
                res = await client.call_tool("doctor", {"probe_gpus": False})
                assert not res.is_error

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
