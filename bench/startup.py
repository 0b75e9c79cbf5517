"""Benchmark: MCP server cold start to a `tools/list` answer over stdio, and import time of the core.

Each run starts a fresh interpreter (cold), so nothing is cached in-process. One summary line per figure;
the last line is the headline figure.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

RUNS = 15

# A raw JSON-RPC exchange (no client library in the timed path): initialize, initialized, tools/list.
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def cold_start_once() -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelpilot.adapters.mcp_server", "--toolsets", "all"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin and proc.stdout
    for msg in (INIT, INITIALIZED, LIST):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    tools = -1
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server exited before answering tools/list")
        msg = json.loads(line)
        if msg.get("id") == 2:
            tools = len(msg["result"]["tools"])
            break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.terminate()
    proc.wait(timeout=10)
    return elapsed, tools


def import_once(stmt: str) -> float:
    code = f"import time; t=time.perf_counter(); {stmt}; print(time.perf_counter()-t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def summary(name: str, values: list[float], unit_scale: float, unit: str, goal: str) -> str:
    med = statistics.median(values) * unit_scale
    lo, hi = min(values) * unit_scale, max(values) * unit_scale
    return f"{name}={med:.3f} {unit} (median of {len(values)}, min {lo:.3f}, max {hi:.3f}; goal {goal})"


def main() -> None:
    cold_start_once()  # warm the OS page cache once; each timed run is still a fresh interpreter
    core = [import_once("import kernelpilot.capabilities as c; c.all_capabilities()") for _ in range(RUNS)]
    print(summary("import_core_and_registry_s", core, 1.0, "s", "<= 0.3 s"))
    sdk = [import_once("import mcp.server.mcpserver") for _ in range(RUNS)]
    print(summary("baseline_mcp_sdk_import_alone_s", sdk, 1.0, "s", "floor: the SDK alone"))
    results = [cold_start_once() for _ in range(RUNS)]
    times = [t for t, _ in results]
    print(f"machine: {sys.platform}, python {sys.version.split()[0]}, tools listed: {results[0][1]}")
    print(summary("mcp_cold_start_to_tools_list_s", times, 1.0, "s", "<= 1.0 s"))


if __name__ == "__main__":
    main()
