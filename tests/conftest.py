"""Shared test helpers: run the CLI in-process, and skip tool-dependent tests with the tool's name."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures"


@pytest.fixture(autouse=True, scope="session")
def _mcp_results_in_a_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Full results of cut MCP answers (kernelpilot.adapters.mcp_answer) go to a temp folder, not ~/.cache;
    servers started as subprocesses inherit it."""
    os.environ["KERNELPILOT_MCP_RESULTS"] = str(tmp_path_factory.mktemp("mcp-results"))


@pytest.fixture(autouse=True, scope="session")
def _claude_profile_in_a_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Claude Code's config folder is a temporary one for the whole session (issue 42): `skills install`, the
    `claude` CLI and anything else that writes a Claude profile reach it, never ~/.claude or ~/.claude.json.
    Servers and CLIs started as subprocesses inherit it; tests of an installer also set their own HOME."""
    os.environ["CLAUDE_CONFIG_DIR"] = str(tmp_path_factory.mktemp("claude-profile") / ".claude")


@dataclass
class CliRun:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Call `kernelpilot <args>` in-process; returns exit code, stdout, stderr."""
    from kernelpilot.adapters.cli import main

    def _run(*args: str) -> CliRun:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse errors
            code = int(exc.code or 0)
        cap = capsys.readouterr()
        return CliRun(code, cap.out, cap.err)

    return _run


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`@pytest.mark.needs_tool("nvdisasm")` skips with the tool's name when it cannot be found.

    In CI (`KERNELPILOT_CI=1`) nothing is skipped: the test runs and fails, since CI installs every tool.
    """
    from kernelpilot.host.toolchain import find_tool

    in_ci = os.environ.get("KERNELPILOT_CI") == "1"
    for item in items:
        for mark in item.iter_markers("needs_tool"):
            for name in mark.args:
                if find_tool(name) is not None:
                    continue
                if name in NOT_INSTALLABLE_IN_CI:
                    item.add_marker(
                        pytest.mark.skip(reason=f"needs {name!r}, a vendor GPU tool no registry offers")
                    )
                elif not in_ci:
                    item.add_marker(pytest.mark.skip(reason=f"needs external tool {name!r} (not found)"))


PYTHON = sys.executable

# Vendor GPU tools that no registry CI can reach offers (ncu ships with the CUDA toolkit installer / Nsight,
# rocprofv3 and hipcc with ROCm): tests needing them skip with that reason even in CI, and run on the device.
NOT_INSTALLABLE_IN_CI = frozenset({"ncu", "rocprofv3", "hipcc", "nvidia-smi", "rocm-smi"})
