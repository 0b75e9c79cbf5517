"""How much of an agent's context kernelpilot's MCP server takes: the tool list (default and per toolset) and
the largest answer of each tool.

Measured through the official MCP client (in-process server, `tools/list`), as a host receives it.
Per listing: characters of descriptions + input schemas + output schemas (JSON text, the measure of issue 16),
characters of the whole listing as compact JSON, and approximate tokens (characters / 4, a rough rule for
English and JSON; a host's tokenizer gives its own count). A toolset's row counts its own tools only; the
server serves it together with `core`. The listing is deterministic: it is taken `RUNS` times and the spread
is the difference between runs (expected 0).

Answers: every call of `tests/foundation/mcp_answers.py` (every tool on recorded fixtures; GPU-only tools
answer with a recorded result) through the same client; per tool, the largest answer's characters of text
content + structured content (compact JSON), ~tokens = characters / 4, against the 32,000-character budget
(`kernelpilot.adapters.mcp_answer.ANSWER_CHARS`). `--no-answers` skips them (the sweep calls start Dask).

Run: `.venv/bin/python bench/mcp_context.py`
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

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


def _answer(call: Any, scratch: Path) -> tuple[int, int, bool]:
    from tests.foundation.mcp_answers import answer_size, answering_with

    args = call.args(scratch)

    async def main() -> Any:
        async with Client(build_server("all")) as client:
            return await client.call_tool(call.tool, args)

    with answering_with(call):
        res = anyio.run(main)
    text, structured = answer_size(res)
    return text, structured, bool(res.is_error)


def answers() -> int:
    """Print the largest answer per tool; the number of tools over the budget."""
    from tests.foundation.mcp_answers import CALLS, NOT_CALLED

    from kernelpilot.adapters.mcp_answer import ANSWER_CHARS
    from kernelpilot.host.toolchain import find_tool

    largest: dict[str, tuple[int, int, str]] = {}
    for call in CALLS:
        if call.needs_tool and find_tool(call.needs_tool) is None:
            print(f"  skipped {call.id}: needs {call.needs_tool}")
            continue
        with tempfile.TemporaryDirectory() as scratch:
            text, structured, error = _answer(call, Path(scratch))
        if error:
            print(f"  {call.id}: answered with an error")
            continue
        if call.tool not in largest or text + structured > sum(largest[call.tool][:2]):
            largest[call.tool] = (text, structured, call.label)
    print()
    print(f"{'tool':<22} {'largest answer on':<26} {'text':>8} {'struct':>8} {'total':>8} {'~tokens':>8}")
    over = 0
    for tool, (text, structured, label) in sorted(largest.items(), key=lambda kv: -sum(kv[1][:2])):
        total = text + structured
        over += total > ANSWER_CHARS
        print(f"{tool:<22} {label:<26} {text:>8,} {structured:>8,} {total:>8,} {total // 4:>8,}")
    for tool, why in NOT_CALLED.items():
        print(f"{tool:<22} not called: {why}")
    top = max(sum(v[:2]) for v in largest.values())
    print(f"largest answer {top:,} chars (~{top // 4:,} tokens); budget {ANSWER_CHARS:,}, {over} over")
    return over


def main() -> int:
    os.environ.pop("KERNELPILOT_TOOLSETS", None)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.foundation.mcp_answers
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
    if "--no-answers" not in sys.argv:
        answers()
    default = rows["default"]
    med = statistics.median(default)
    spread = max(default) - min(default)
    print()
    print(
        f"default_tools_list={med:,.0f} chars (~{med / 4:,.0f} tokens; budget 24,000 chars) "
        f"(median of {RUNS}, spread {spread} chars)"
    )
    return 0


if __name__ == "__main__":  # the guard matters: Dask's worker processes re-import this file
    sys.exit(main())
