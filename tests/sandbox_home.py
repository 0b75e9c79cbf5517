"""Environments for subprocesses that install things: a temporary HOME and Claude profile, not the real ones.

Tests that run an installer, Claude Code's CLI or the plugin launcher build their environment here, so none
of them can write into `~/.claude` or `~/.claude.json` (issue 42). pip keeps the caller's cache and user
config (found from the real environment before HOME moves), so a temporary HOME costs no downloads and pip
writes no cache into it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NPM_BIN = REPO / ".ci" / "npm" / "node_modules" / ".bin"


@cache
def pip_settings() -> dict[str, str]:
    """PIP_CACHE_DIR and PIP_CONFIG_FILE of the caller (what pip would use before HOME moves)."""
    out = {k: os.environ[k] for k in ("PIP_CACHE_DIR", "PIP_CONFIG_FILE") if os.environ.get(k)}
    if "PIP_CACHE_DIR" not in out:
        found = subprocess.run(
            [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
        if found:
            out["PIP_CACHE_DIR"] = found
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip" / "pip.conf"
    if "PIP_CONFIG_FILE" not in out and config.is_file():
        out["PIP_CONFIG_FILE"] = str(config)
    return out


def sandbox_env(home: Path, *, claude_config: Path | None = None) -> dict[str, str]:
    """os.environ with HOME at `home`, CLAUDE_CONFIG_DIR at `claude_config` (default `home/.claude`), the npm
    clients first on PATH, Claude Code's non-essential traffic (telemetry, update checks) off."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY")}
    env.update(pip_settings())
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(claude_config or home / ".claude"),
        PATH=str(NPM_BIN) + os.pathsep + env.get("PATH", ""),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )
    return env
