"""The timing/tasks/suggest tools through a real MCP client (in-process server)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def _call_all(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    async def go() -> tuple[list[str], list[Any]]:
        async with Client(build_server("tasks,measure,experiments")) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            results = [await client.call_tool(name, args) for name, args in calls]
            return tools, results

    return anyio.run(go)


def test_tools_over_mcp(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "tasks" / "sample_task", repo)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "."], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=repo, check=True)
    task_dir = str(repo / ".kernelpilot" / "tasks" / "mcp")
    tools, res = _call_all(
        [
            (
                "create_task",
                {
                    "name": "mcp",
                    "eval_command": [sys.executable, "bench.py"],
                    "metric_regex": r"time_us: ([0-9.]+)",
                    "allowed_file": ["kernel.py"],
                    "correctness_command": [[sys.executable, "check.py"]],
                    "workdir": str(repo),
                    "runs": 4,
                },
            ),
            ("evaluate", {"task": task_dir, "refresh_baseline": True}),
            ("evaluate", {"task": task_dir}),
            ("ledger_show", {"task": task_dir}),
            (
                "suggest_experiments",
                {"bottleneck": str(FIXTURES / "suggest" / "bottleneck_two_kernels.json")},
            ),
            (
                "time_kernel",
                {
                    "command": [sys.executable, "-c", "print('us=5')"],
                    "metric_regex": r"us=(\d+)",
                    "runs": 2,
                    "warmup": 0,
                },
            ),
            (
                "create_task",
                {
                    "name": "bad",
                    "eval_command": ["python bench.py"],
                    "metric_regex": "(x)",
                    "allowed_file": ["kernel.py"],
                    "workdir": str(repo),
                },
            ),
        ]
    )
    assert {"time_kernel", "create_task", "evaluate", "ledger_show", "suggest_experiments"} <= set(tools)
    assert not any(r.is_error for r in res[:6]), [r.content for r in res if r.is_error]
    assert res[1].structured_content["baseline"]["stats"]["count"] == 4
    assert res[2].structured_content["record"]["status"] == "neutral"
    assert res[3].structured_content["total"] == 1
    sugg = res[4].structured_content["suggestions"]
    assert sugg and all(s["label"] == "hypothesis" for s in sugg)
    assert res[5].structured_content["stats"]["median"] == 5.0
    assert res[6].is_error and "shell string" in json.dumps([c.model_dump() for c in res[6].content])
