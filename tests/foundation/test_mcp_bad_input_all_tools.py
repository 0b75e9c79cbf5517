"""Every MCP tool answers bad input with a tool error naming the argument, and the server keeps serving.

Walks the live tool list, so a tool added later is covered without touching this file.
"""

import sys

import anyio
from mcp import Client, StdioServerParameters

SERVER = StdioServerParameters(
    command=sys.executable, args=["-m", "kernelpilot.adapters.mcp_server", "--toolsets", "all"]
)


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _wrong_value(schema: dict) -> object:
    """A value of the wrong JSON type for a property schema."""
    types = set()
    for s in [schema, *schema.get("anyOf", [])]:
        if "type" in s:
            types.add(s["type"])
    if "object" in types or "array" in types:
        return 12345
    return {"not": ["the", "right", "type"]}


def test_every_tool_rejects_missing_and_mistyped_arguments(tmp_path):
    async def main():
        async with Client(SERVER) as client:
            tools = (await client.list_tools()).tools
            checked = 0
            for tool in tools:
                schema = tool.input_schema
                required = schema.get("required", [])
                props = schema.get("properties", {})
                if required:
                    res = await client.call_tool(tool.name, {})
                    assert res.is_error, f"{tool.name} accepted a call without {required}"
                    assert any(r in _text(res) for r in required), (tool.name, _text(res))
                for name, prop in props.items():
                    res = await client.call_tool(tool.name, {name: _wrong_value(prop)})
                    assert res.is_error, f"{tool.name} accepted a mistyped {name}"
                    assert name in _text(res), (tool.name, name, _text(res))
                    checked += 1
                    break  # one mistyped argument per tool keeps the test fast
                res = await client.call_tool(tool.name, {"kp_unknown_argument": 1})
                assert res.is_error and "kp_unknown_argument" in _text(res), tool.name
            alive = await client.call_tool("doctor", {"probe_gpus": False})
            assert not alive.is_error
            assert checked >= 1

    anyio.run(main)
