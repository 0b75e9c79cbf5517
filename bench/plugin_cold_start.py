"""Benchmark: the Claude Code plugin's MCP server, started as the plugin starts it, to a `tools/list` answer.

The plugin runs `python3 ${CLAUDE_PLUGIN_ROOT}/bin/kernelpilot-plugin-mcp`; its first start builds the
plugin's own environment under `${CLAUDE_PLUGIN_DATA}` (a fresh temporary folder here), later starts reuse
it. Each start is timed from spawning the launcher to the official MCP client's `list_tools` answer
(`mcp.Client` over stdio), so it includes the launcher's source check, the exec into the environment's
Python and the server's own start. XDG_CACHE_HOME is a temporary folder too: the first start also fills
kernelpilot's schema cache, as a user's first start does.

    python bench/plugin_cold_start.py [--runs N] [--root PLUGIN_DIR]

Prints the first run's set-up time, then the later starts; the last line is the figure (goal <= 1.5 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent


async def _start_to_tools_list(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    server = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=env["HOME"])
    started = time.perf_counter()
    async with Client(server, read_timeout_seconds=900) as client:
        tools = (await client.list_tools()).tools
        elapsed = time.perf_counter() - started
    return elapsed, len(tools)


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds to the tools/list answer, CPU seconds the server's processes used in all): the CPU
    figure does not grow with the machine's load, the wall figure does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, _ = anyio.run(_start_to_tools_list, argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _installed_copy(plugin: Path, dest: Path) -> Path:
    """The plugin as Claude Code installs it: links followed, no byte-code caches (and no edits mid-run)."""
    shutil.copytree(plugin, dest, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="later starts to time (default 9)")
    parser.add_argument("--root", type=Path, default=REPO / "plugin", help="the plugin folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kp-plugin-bench-") as tmp:
        root = _installed_copy(args.root, Path(tmp) / "plugin")
        env = dict(os.environ)
        env.update(
            CLAUDE_PLUGIN_ROOT=str(root),
            CLAUDE_PLUGIN_DATA=str(Path(tmp) / "data"),
            XDG_CACHE_HOME=str(Path(tmp) / "cache"),
            HOME=env.get("HOME", tmp),
        )
        launcher = ["python3", str(root / "bin" / "kernelpilot-plugin-mcp")]
        print(f"python3 here: {shutil.which('python3')} (a pyenv shim adds a shell and pyenv per start)")
        first, tools = anyio.run(_start_to_tools_list, launcher, env)
        print(f"first start (builds the plugin's environment, then tools/list): {first:.1f} s, {tools} tools")
        (venv,) = (Path(tmp) / "data").glob("venv-*")
        direct = [str(venv / "bin" / "python"), "-m", "kernelpilot.adapters.mcp_server"]
        runs = []
        for _ in range(args.runs):  # interleaved, so both see the same machine load
            runs.append((_timed(launcher, env), _timed(direct, env)))
    later = [w for (w, _), _ in runs]
    bare = [w for _, (w, _) in runs]
    cpu = statistics.median(c for (_, c), _ in runs)
    med = statistics.median(later)
    print("later starts through the launcher (s): " + ", ".join(f"{t:.3f}" for t in later))
    print(
        f"CPU per later start (launcher + server, to exit): median {cpu:.3f} s; load average now "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
        + f" on {os.cpu_count()} CPUs"
    )
    base = statistics.median(bare)
    print(
        f"the same server started directly by the environment's python: median {base:.3f} s "
        f"(spread {min(bare):.3f}-{max(bare):.3f}); the launcher adds {med - base:+.3f} s"
    )
    print(
        f"figure={med:.3f} s plugin server start to tools/list after the first run "
        f"(median of {len(later)}, spread {min(later):.3f}-{max(later):.3f} s; first run {first:.1f} s; "
        "goal <= 1.5 s)"
    )


if __name__ == "__main__":
    main()
