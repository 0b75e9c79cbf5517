"""Issues 41 and 42 over MCP, through the official client (in-memory `mcp.Client(server)`):

- an unexpected error reaches the agent with its class, the argument involved and a fix, never a bare
  "Error executing tool X";
- a call that cannot finish within its limit is cancelled with a typed error and its worker released; the
  server keeps serving (tools/list and other calls) under more such calls than the SDK's 40 worker threads;
- 50 concurrent calls on FIFO inputs all end with typed errors while tools/list is answered, and every FIFO
  is left as it was;
- a tool whose toolset is off says which toolset holds it and how to enable it.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from tests.waiting import wait_until

from kernelpilot.adapters.mcp_sdk import intercept_tool_errors
from kernelpilot.adapters.mcp_server import (
    TOOL_TIMEOUT_ENV,
    _make_tool,
    build_server,
    unexpected_error_text,
    unknown_tool_text,
)
from kernelpilot.capabilities import Capability
from kernelpilot.experiments.api import ExpGetRequest, RecordResult

sys.path.insert(0, str(Path(__file__).parent))
import _crashcap


def _text(result) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _server(*targets: str) -> MCPServer:  # type: ignore[type-arg]
    caps = [
        Capability(
            tool=t.split(":")[1],
            command=(t,),
            summary=t,
            description=f"A test tool ({t}) for the MCP robustness tests.",
            request=ExpGetRequest,
            result=RecordResult,
            target=t,
            toolset="core",
        )
        for t in targets
    ]
    server = MCPServer(name="t", tools=[_make_tool(c) for c in caps])
    intercept_tool_errors(server, lambda n: unknown_tool_text(caps, n), unexpected_error_text)
    return server


def test_unexpected_error_names_class_argument_and_fix(tmp_path: Path) -> None:
    server = _server("_crashcap:crash_on_path", "_crashcap:crash_plain")

    async def main() -> None:
        async with Client(server) as client:
            res = await client.call_tool("crash_on_path", {"id": "r1", "db": str(tmp_path)})
            text = _text(res)
            assert res.is_error and text.startswith("PermissionError (argument `db`): ")
            assert "fix: check `db`" in text and "Error executing tool" not in text
            res = await client.call_tool("crash_plain", {"id": "r1"})
            assert res.is_error and _text(res).startswith("KeyError: 'missing'\nfix: check the arguments")
            res = await client.call_tool("crash_plain", {"id": 12})  # the SDK's own argument check
            assert res.is_error and "invalid arguments: id:" in _text(res) and "fix:" in _text(res)

    anyio.run(main)


def test_blocked_calls_time_out_and_the_server_keeps_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOL_TIMEOUT_ENV, "0.5")
    server = _server("_crashcap:block", "_crashcap:crash_plain")
    calls = 60  # more than the SDK's default pool of 40 worker threads
    _crashcap.ENDED.clear()
    answers: list[str] = []

    async def one(client: Client) -> None:
        res = await client.call_tool("block", {"id": "r1"})
        assert res.is_error
        answers.append(_text(res))

    async def main() -> None:
        async with Client(server) as client:
            async with anyio.create_task_group() as tg:
                for _ in range(calls):
                    tg.start_soon(one, client)
                # while 60 calls are blocked, the server still lists tools and answers other calls
                assert {t.name for t in (await client.list_tools()).tools} == {"block", "crash_plain"}
                res = await client.call_tool("crash_plain", {"id": "r1"})
                assert res.is_error and _text(res).startswith("KeyError")
            assert len(answers) == calls
            assert all("ToolTimeoutError: block did not finish within its 0.5 s limit" in a for a in answers)
            # the pool is free again: a new call runs and times out on its own limit, not behind the others
            res = await client.call_tool("block", {"id": "r1"})
            assert "ToolTimeoutError" in _text(res)

    try:
        anyio.run(main)
    finally:
        _crashcap.RELEASE.set()  # let the abandoned threads end
    wait_until(lambda: len(_crashcap.ENDED) == calls + 1, "every abandoned thread to end once released")
    _crashcap.RELEASE.clear()


def _fifos(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        p = tmp_path / (f"fifo{i}" if i % 2 else f"dev_null{i}")  # device-like names, FIFOs underneath
        os.mkfifo(p)
        out.append(p)
    return out


def test_fifty_concurrent_calls_on_fifos_end_typed_while_tools_list_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOOL_TIMEOUT_ENV, "60")  # a bound for a failing test only; each refusal is immediate
    fifos = _fifos(tmp_path, 50)
    calls = [
        ("exp_list", lambda f: {"db": str(f)}),
        ("exp_get", lambda f: {"db": str(f), "id": "r1"}),
        ("exp_upgrade", lambda f: {"db": str(f)}),
        ("exp_import", lambda f: {"path": str(f), "db": str(tmp_path / "x.db")}),
        ("suggest_experiments", lambda f: {"bottleneck": str(f)}),
    ]
    answers: list[tuple[str, bool, str]] = []
    listed: list[int] = []

    async def one(client: Client, i: int) -> None:
        tool, args = calls[i % len(calls)]
        res = await client.call_tool(tool, args(fifos[i]))
        answers.append((tool, res.is_error, _text(res)))

    async def lister(client: Client, done: anyio.Event) -> None:
        while not done.is_set():
            listed.append(len((await client.list_tools()).tools))
            await anyio.sleep(0)

    async def main() -> None:
        server = build_server("all")
        async with Client(server) as client:
            done = anyio.Event()
            async with anyio.create_task_group() as outer:
                outer.start_soon(lister, client, done)
                async with anyio.create_task_group() as tg:
                    for i in range(50):
                        tg.start_soon(one, client, i)
                done.set()

    anyio.run(main)
    assert len(answers) == 50 and listed and min(listed) == max(listed) > 5
    for tool, is_error, text in answers:
        assert is_error, (tool, text)
        head = text.removeprefix(f"Error executing tool {tool}: ").split(":", 1)[0]
        assert head in {"StoreCorruptError", "InputFileError", "ReaderError"}, (tool, text)
        assert "not a regular file" in text and "\nfix: " in text, (tool, text)
    assert all(stat.S_ISFIFO(os.lstat(f).st_mode) for f in fifos)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in fifos)


def test_a_tool_of_a_toolset_that_is_off_says_how_to_enable_it() -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            res = await client.call_tool("exp_list", {})
            text = _text(res)
            assert res.is_error and "belongs to the `experiments` toolset" in text
            assert "toolsets_enable` with enable=['experiments']" in text and "--toolsets experiments" in text
            res = await client.call_tool("exp_lst", {})
            assert res.is_error and "no kernelpilot tool (did you mean exp_list" in _text(res)
            enabled = await client.call_tool("toolsets_enable", {"enable": ["experiments"]})
            assert not enabled.is_error
            res = await client.call_tool("exp_list", {"db": "/nonexistent-dir/x.db"})
            assert "belongs to" not in _text(res)

    anyio.run(main)


def test_text_arguments_that_look_like_json_stay_text(tmp_path: Path) -> None:
    """The SDK turned a JSON-looking string into data for any field not annotated exactly `str`: `why`
    '{"a": 1}' was refused as not a string and `text` "null" became None, dropping the filter silently."""
    db = str(tmp_path / "exp.db")

    async def main() -> None:
        async with Client(build_server(["experiments"])) as client:
            made = await client.call_tool(
                "exp_create",
                {"db": db, "operator": "gemm", "summary": "tile 128 - faster", "status": "success",
                 "why": '{"a": 1}', "tags": '["t1", "t2"]'},
            )  # fmt: skip
            assert not made.is_error, _text(made)
            record = made.structured_content["record"]
            assert record["description"]["why"] == '{"a": 1}' and record["tags"] == ["t1", "t2"]
            every = await client.call_tool("exp_list", {"db": db})
            assert every.structured_content["total"] == 1
            for text in ("null", "true", '["zz"]'):
                found = await client.call_tool("exp_list", {"db": db, "text": text})
                assert not found.is_error and found.structured_content["total"] == 0, text

    anyio.run(main)
