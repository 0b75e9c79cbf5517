"""Toolsets and tool annotations through the official MCP client (in-process server).

The default tools/list is sized for an agent; every other capability is reachable by selecting its toolset at
start-up or with `toolsets_enable` at run time; the four behaviour hints each capability declares reach the
client unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from kernelpilot.adapters.mcp_server import build_server, select_toolsets
from kernelpilot.capabilities import Capability, _with_toolset, all_capabilities, toolset_names
from kernelpilot.foundation.errors import InvalidArgumentError

CUBIN = Path(__file__).resolve().parents[1] / "fixtures" / "isa" / "nvidia" / "kernels.sm_100.cubin"
DEFAULT_BUDGET_CHARS = 24_000


def _listing(toolsets: str | None = None) -> list[dict]:
    async def main() -> list[dict]:
        async with Client(build_server(toolsets)) as client:
            tools = (await client.list_tools()).tools
            return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

    return anyio.run(main)


def _chars(tools: list[dict]) -> int:
    """The issue's measure: descriptions + input schemas + output schemas as JSON text."""
    return sum(
        len(t.get("description", ""))
        + len(json.dumps(t["inputSchema"]))
        + len(json.dumps(t.get("outputSchema", {})))
        for t in tools
    )


def test_default_list_is_core_and_fits_the_budget(monkeypatch):
    monkeypatch.delenv("KERNELPILOT_TOOLSETS", raising=False)
    tools = _listing()
    names = {t["name"] for t in tools}
    core = {c.tool for c in all_capabilities() if c.toolset == "core"}
    assert names == core | {"toolsets_enable"}
    assert {"doctor", "spec_lookup", "roofline"} <= names
    assert "isa_list" not in names and "exp_create" not in names
    assert _chars(tools) <= DEFAULT_BUDGET_CHARS
    assert len(json.dumps(tools, separators=(",", ":"))) <= DEFAULT_BUDGET_CHARS  # the whole listing, too
    for t in tools:
        assert t.get("outputSchema"), f"{t['name']} lost its structured output"
        assert '"title"' not in json.dumps(t["inputSchema"]), f"{t['name']}: schema titles are repetition"


def test_all_serves_every_capability_and_env_selects(monkeypatch):
    every = {c.tool for c in all_capabilities()}
    assert {t["name"] for t in _listing("all")} == every | {"toolsets_enable"}
    monkeypatch.setenv("KERNELPILOT_TOOLSETS", "isa, profile")
    names = {t["name"] for t in _listing()}
    assert {"isa_list", "isa_fit_view", "profile_parse"} <= names
    assert "exp_create" not in names and "doctor" in names


def test_unknown_toolset_is_a_typed_error_naming_the_known_ones():
    with pytest.raises(InvalidArgumentError) as err:
        select_toolsets("isa,nosuchset")
    assert "nosuchset" in err.value.message and "isa" in err.value.hint


def test_capability_outside_default_reachable_by_selecting_its_toolset():
    async def main() -> None:
        async with Client(build_server("isa")) as client:
            res = await client.call_tool("isa_list", {"file": str(CUBIN)})
            assert not res.is_error, res.content
            assert res.structured_content["entries"][0]["arch"] == "sm_100"

    anyio.run(main)


def test_toolsets_enable_adds_tools_at_run_time():
    async def main() -> None:
        async with Client(build_server()) as client:
            before = {t.name for t in (await client.list_tools()).tools}
            assert "isa_list" not in before
            listed = await client.call_tool("toolsets_enable", {})
            sets = {s["name"]: s for s in listed.structured_content["toolsets"]}
            assert sets["core"]["enabled"] and not sets["isa"]["enabled"]
            assert "isa_list" in sets["isa"]["tools"]

            bad = await client.call_tool("toolsets_enable", {"enable": ["nosuchset"]})
            assert bad.is_error and "nosuchset" in bad.content[0].text

            res = await client.call_tool("toolsets_enable", {"enable": ["isa"]})
            assert not res.is_error
            assert "isa_list" in res.structured_content["added"]
            after = {t.name for t in (await client.list_tools()).tools}
            assert after - before == {c.tool for c in all_capabilities() if c.toolset == "isa"}
            called = await client.call_tool("isa_list", {"file": str(CUBIN)})
            assert not called.is_error
            again = await client.call_tool("toolsets_enable", {"enable": ["isa"]})
            assert again.structured_content["added"] == []

    anyio.run(main)


def test_every_capability_has_a_toolset_and_undeclared_ones_take_their_module_name():
    assert all(c.toolset for c in all_capabilities())
    assert set(toolset_names()) >= {"core", "isa", "profile", "experiments", "workspace", "tasks"}
    bare = Capability(
        tool="sweep_run",
        command=("sweep", "run"),
        summary="s",
        description="d",
        request=all_capabilities()[0].request,
        result=all_capabilities()[0].result,
        target="x:y",
    )
    assert _with_toolset(bare, "sweep").toolset == "sweep"
    assert _with_toolset(Capability(**{**bare.__dict__, "toolset": "core"}), "sweep").toolset == "core"


def test_annotations_reach_the_client_as_declared():
    tools = {t["name"]: t for t in _listing("all")}
    for cap in all_capabilities():
        hints = tools[cap.tool]["annotations"]
        assert hints["readOnlyHint"] is cap.read_only, cap.tool
        assert hints["destructiveHint"] is (cap.destructive and not cap.read_only), cap.tool
        assert hints["idempotentHint"] is cap.is_idempotent, cap.tool
        assert hints["openWorldHint"] is cap.open_world, cap.tool
    # spot checks of the declarations themselves
    assert tools["spec_lookup"]["annotations"]["readOnlyHint"] is True
    evaluate = tools["evaluate"]["annotations"]
    assert evaluate["readOnlyHint"] is False and evaluate["openWorldHint"] is True
    assert evaluate["destructiveHint"] is True  # runs the task's eval command
    exp_create = tools["exp_create"]["annotations"]
    assert exp_create["destructiveHint"] is False and exp_create["idempotentHint"] is False
    assert tools["exp_ingest"]["annotations"]["idempotentHint"] is True


def test_stdio_server_advertises_tool_list_changes_and_sends_one():
    import sys

    from mcp import StdioServerParameters

    seen: list[str] = []

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method:
            seen.append(method)

    async def main() -> None:
        server = StdioServerParameters(command=sys.executable, args=["-m", "kernelpilot.adapters.mcp_server"])
        # Hosts such as Claude Code speak a handshake-era protocol version, where this is a notification.
        async with Client(server, message_handler=on_message, mode="legacy") as client:
            assert client.server_capabilities.tools.list_changed is True
            res = await client.call_tool("toolsets_enable", {"enable": ["profile"]})
            assert "profile_parse" in res.structured_content["added"]
            assert "profile_parse" in {t.name for t in (await client.list_tools()).tools}

    anyio.run(main)
    assert "notifications/tools/list_changed" in seen


def test_a_shared_record_model_is_published_once_per_toolset(tmp_path):
    tools = _listing("experiments")
    exp = [t for t in tools if t["name"].startswith("exp_")]
    full = [
        t["name"]
        for t in exp
        if "properties" in t["outputSchema"].get("$defs", {}).get("ExperimentRecord", {})
    ]
    stubs = [
        t["name"] for t in exp if "$comment" in t["outputSchema"].get("$defs", {}).get("ExperimentRecord", {})
    ]
    assert full == ["exp_create"]
    assert len(stubs) >= 7 and "exp_list" in stubs
    lst = next(t for t in exp if t["name"] == "exp_list")["outputSchema"]
    assert "Environment" not in lst["$defs"], "definitions only the full record used are dropped"

    async def main() -> None:  # structured output still validates against the shortened schema
        async with Client(build_server("experiments")) as client:
            db = str(tmp_path / "e.db")
            made = await client.call_tool(
                "exp_create",
                {"db": db, "operator": "gemm", "summary": "tile 128 - faster", "status": "success"},
            )
            assert not made.is_error, made.content
            listed = await client.call_tool("exp_list", {"db": db})
            assert not listed.is_error
            assert listed.structured_content["records"][0]["operator"] == "gemm"

    anyio.run(main)
