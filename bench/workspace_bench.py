"""Benchmark: workspace init (target <= 1 s) and memory summary over 500 iterations (target <= 200 ms).

Runs in-process through the core functions (what the CLI and MCP server call), on a temp folder.
Prints one line per figure; the last line is the summary figure.
    python bench/workspace_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelpilot.host.toolchain import run
from kernelpilot.workspace.core import init_workspace
from kernelpilot.workspace.memory import memory_create, memory_summary
from kernelpilot.workspace.models import InitWorkspaceRequest, MemoryCreateRequest, MemorySummaryRequest

KERNEL = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "workspace" / "vector_add.cu"
ITERATIONS = 500


def _line(name: str, samples_s: list[float], unit: str = "ms") -> str:
    med = statistics.median(samples_s) * 1e3
    spread = (max(samples_s) - min(samples_s)) / statistics.median(samples_s) * 100
    return (
        f"{name}={med:.1f} {unit} (median of {len(samples_s)}, spread {spread:.0f}% min-max, "
        f"min {min(samples_s) * 1e3:.1f} max {max(samples_s) * 1e3:.1f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kp-bench-") as tmp:
        root = Path(tmp)
        # warm imports (jinja2, templates) once, as a long-lived MCP server would have them
        init_workspace(
            InitWorkspaceRequest(
                name="warm",
                kernel=str(KERNEL),
                platform="H100",
                framework="cuda",
                root=str(root),
                allow_tbd=True,
            )
        )
        init_s = []
        for i in range(args.runs):
            req = InitWorkspaceRequest(
                name=f"ws{i}",
                kernel=str(KERNEL),
                platform="H100",
                framework="cuda",
                dtype="bf16",
                shape=["N=67108864"],
                roofline_args={"op": "elementwise", "numel": 67108864, "inputs": 2, "outputs": 1},
                root=str(root),
            )
            t0 = time.perf_counter()
            init_workspace(req)
            init_s.append(time.perf_counter() - t0)
        cli_s = []
        for i in range(5):
            argv = [
                sys.executable,
                "-m",
                "kernelpilot",
                "workspace",
                "init",
                f"cli{i}",
                "--kernel",
                str(KERNEL),
                "--platform",
                "H100",
                "--framework",
                "cuda",
                "--allow-tbd",
                "--root",
                str(root),
            ]
            t0 = time.perf_counter()
            run(argv, timeout_s=60)
            cli_s.append(time.perf_counter() - t0)
        ws = str(root / "ws0")
        for v in range(ITERATIONS):
            memory_create(
                MemoryCreateRequest(
                    workspace=ws,
                    change=f"iteration {v}",
                    median=1000.0 - v,
                    spread_pct=0.5,
                    correct=True,
                    max_rel_err=1e-6,
                    verdict="memory_bound",
                    commit=False,
                    pitfall=["tail => epilogue"] if v % 7 == 0 else [],
                )
            )
        summary_s = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            res = memory_summary(MemorySummaryRequest(workspace=ws))
            summary_s.append(time.perf_counter() - t0)
        assert len(res.entries) == ITERATIONS and res.best_version == ITERATIONS - 1
    print(_line("workspace_init_cli_cold_process", cli_s))
    print(_line("workspace_init", init_s))
    print(_line(f"memory_summary_{ITERATIONS}", summary_s))


if __name__ == "__main__":
    main()
