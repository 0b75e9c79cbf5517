"""What `kernelpilot.adapters.mcp_sdk` relies on in the MCP SDK's internals. When an SDK upgrade changes one
of these, this test names it; fix `mcp_sdk.py` (the only module that uses them), not the callers."""

from __future__ import annotations

import inspect

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from kernelpilot.adapters import mcp_sdk


class _Req(BaseModel):
    n: int


class _Res(BaseModel):
    doubled: int


def test_sdk_internals_kernelpilot_uses_are_still_there():
    from mcp.server.mcpserver.prompts import Prompt
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata

    assert {"arg_model", "output_schema", "output_model"} <= set(FuncMetadata.model_fields)
    assert callable(FuncMetadata.convert_result) and callable(FuncMetadata.call_fn_with_arg_validation)
    # TextKeepingMetadata overrides the SDK's pre-parse of JSON-looking strings
    assert list(inspect.signature(FuncMetadata.pre_parse_json).parameters) == ["self", "data"]
    assert issubclass(mcp_sdk.StrictArguments, ArgModelBase)
    assert callable(ArgModelBase.model_dump_one_level)
    tool_fields = {"fn", "name", "title", "description", "parameters", "fn_metadata", "is_async"}
    assert tool_fields | {"context_kwarg", "annotations"} <= set(Tool.model_fields)
    assert inspect.iscoroutinefunction(Prompt.render)
    assert list(inspect.signature(Prompt.render).parameters)[:3] == ["self", "arguments", "context"]
    server = MCPServer(name="t")
    assert isinstance(server._tool_manager._tools, dict)
    # intercept_tool_errors wraps the manager's call_tool and asks get_tool whether a name is served
    assert list(inspect.signature(server._tool_manager.call_tool).parameters) == [
        "name", "arguments", "context", "convert_result",
    ]  # fmt: skip
    assert callable(server._tool_manager.get_tool)
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

    assert issubclass(UnexpectedToolError, ToolError)
    assert callable(server._lowlevel_server.create_initialization_options)
    assert callable(server._lowlevel_server.run)


def test_tool_built_through_mcp_sdk_validates_and_returns_structured_output():
    async def double(ctx, **kwargs):
        return _Res(doubled=2 * _Req.model_validate(kwargs).n)

    schema_in = mcp_sdk.compact_schema(mcp_sdk.argument_model("double", _Req).model_json_schema())
    tool = mcp_sdk.make_tool(
        double,
        name="double",
        title="Double",
        description="Doubles n.",
        request=_Req,
        result=_Res,
        input_schema=schema_in,
        result_schema=mcp_sdk.compact_schema(mcp_sdk.output_schema(_Res)),
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    server = MCPServer(name="t")
    mcp_sdk.register_tool(server, tool)
    server.add_prompt(
        mcp_sdk.make_prompt("p", "a prompt", [("x", "an x", True)], lambda **kw: f"x={kw['x']}")
    )

    async def main() -> None:
        async with Client(server) as client:
            listed = (await client.list_tools()).tools[0]
            assert listed.input_schema == {
                "additionalProperties": False,
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
                "type": "object",
            }
            assert listed.output_schema["properties"] == {"doubled": {"type": "integer"}}
            ok = await client.call_tool("double", {"n": 21})
            assert ok.structured_content == {"doubled": 42}
            extra = await client.call_tool("double", {"n": 1, "m": 2})
            assert extra.is_error and "m" in extra.content[0].text  # unknown keys are refused
            got = await client.get_prompt("p", {"x": "7"})
            assert got.messages[0].content.text == "x=7"

    anyio.run(main)


def test_compact_schema_drops_title_keywords_only():
    schema = {
        "title": "Model",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "items": {"type": "array", "items": {"title": "X"}},
        },
        "$defs": {"D": {"title": "D", "anyOf": [{"title": "A", "type": "string"}, {"type": "null"}]}},
    }
    assert mcp_sdk.compact_schema(schema) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "items": {"type": "array", "items": {}}},
        "$defs": {"D": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    }


def test_only_mcp_sdk_touches_sdk_internals_and_the_adapters_stay_apart():
    import ast
    from pathlib import Path

    root = Path(mcp_sdk.__file__).parent  # kernelpilot/adapters
    internal = ("func_metadata", "ArgModelBase", "FuncMetadata", "_tool_manager", "_lowlevel_server")
    for path in sorted(root.parent.rglob("*.py")):  # the whole package
        if path.name == "mcp_sdk.py":
            continue
        text = path.read_text(encoding="utf-8")
        used = [name for name in internal if name in text]
        assert not used, f"{path.relative_to(root.parent)} uses MCP SDK internals {used}: go through mcp_sdk"
    tree = ast.parse((root / "mcp_server.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert "kernelpilot.adapters.cli" not in imported, "mcp_server imports the CLI adapter"
    cli_tree = ast.parse((root / "cli.py").read_text(encoding="utf-8"))
    cli_imported = {n.module for n in ast.walk(cli_tree) if isinstance(n, ast.ImportFrom)}
    assert "kernelpilot.adapters.mcp_server" not in cli_imported
