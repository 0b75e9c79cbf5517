"""How much of an agent's context kernelpilot's MCP tool list takes: the default list and each toolset.

Measured through the official MCP client (in-process server, `tools/list`), as a host receives it.
Per listing: characters of descriptions + input schemas + output schemas (JSON text, the measure of issue 16),
characters of the whole listing as compact JSON, and approximate tokens (characters / 4, a rough rule for
English and JSON; a host's tokenizer gives its own count). A toolset's row counts its own tools only; the
server serves it together with `core`. The listing is deterministic: it is taken `RUNS` times and the spread
is the difference between runs (expected 0).

Run: `.venv/bin/python bench/mcp_context.py`
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys

import anyio
from mcp import Client

from kernelpilot import __version__
from kernelpilot.adapters.mcp_server import build_server
from kernelpilot.capabilities import all_capabilities, toolset_names

RUNS = 3


def _listing(toolsets: str | None) -> list[dict]:
    async def main() -> list[dict]:
        async with Client(build_server(toolsets)) as client:
            tools = (await client.list_tools()).tools
            return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

    return anyio.run(main)


def _measure(tools: list[dict]) -> tuple[int, int]:
    parts = sum(
        len(t.get("description", ""))
        + len(json.dumps(t["inputSchema"]))
        + len(json.dumps(t.get("outputSchema", {})))
        for t in tools
    )
    return parts, len(json.dumps(tools, separators=(",", ":")))


def main() -> int:
    os.environ.pop("KERNELPILOT_TOOLSETS", None)
    machine = f"{platform.node()} {platform.machine()}, Python {platform.python_version()}"
    print(f"machine: {machine}, kernelpilot {__version__}")
    sets = ", ".join(toolset_names())
    print(f"inputs: {len(all_capabilities())} capabilities in toolsets {sets}; {RUNS} runs each")
    print()
    head = f"{'listing':<14} {'tools':>5} {'desc+in+out chars':>18} {'~tokens':>8}"
    print(f"{head} {'full JSON chars':>16} {'~tokens':>8}")
    rows: dict[str, list[int]] = {}
    everything = _listing("all")
    for name in ("default", *toolset_names(), "all"):
        runs = []
        for _ in range(RUNS):
            if name == "default":
                tools = _listing(None)
            elif name == "all":
                tools = _listing("all")
            else:
                members = {c.tool for c in all_capabilities() if c.toolset == name}
                tools = [t for t in everything if t["name"] in members]
            runs.append(_measure(tools))
        parts, full = runs[0]
        rows[name] = [p for p, _ in runs]
        print(f"{name:<14} {len(tools):>5} {parts:>18,} {parts // 4:>8,} {full:>16,} {full // 4:>8,}")
    default = rows["default"]
    med = statistics.median(default)
    spread = max(default) - min(default)
    print()
    print(
        f"default_tools_list={med:,.0f} chars (~{med / 4:,.0f} tokens; budget 24,000 chars) "
        f"(median of {RUNS}, spread {spread} chars)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
