"""install.sh with a temporary HOME, and real MCP hosts no one here wrote: Claude Code and MCP Inspector."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "install.sh"
IN_CI = os.environ.get("KERNELPILOT_CI") == "1"


def _need(program: str) -> str:
    path = shutil.which(program) or shutil.which(
        program, path=str(REPO / ".ci" / "npm" / "node_modules" / ".bin")
    )
    if path is None:
        if IN_CI:
            pytest.fail(f"CI must provide {program}")
        pytest.skip(f"needs {program} (npm registry; .ci/run installs it)")
    return path


def _env(home: Path, extra_path: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(home)
    path = env.get("PATH", "")
    if extra_path:
        path = extra_path + os.pathsep + path
    else:
        # hide any claude on PATH so the plain install test does not register anything
        path = os.pathsep.join(p for p in path.split(os.pathsep) if not (Path(p) / "claude").exists())
    env["PATH"] = path
    return env


def _install(home: Path, *args: str, extra_path: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(INSTALL), "--python", sys.executable, "--dev", *args],
        env=_env(home, extra_path),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "->" + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_text(errors="replace")
        else:
            out[rel] = "dir"
    return out


def _skills() -> list[str]:
    return sorted(p.parent.name for p in (REPO / "skills").glob("*/SKILL.md"))


def _commands() -> list[str]:
    return sorted(p.name for p in (REPO / "skills" / ".commands").glob("*.md"))


def test_install_links_idempotent_respects_foreign_dirs_and_uninstalls(tmp_path):
    skills = _skills()
    assert len(skills) >= 2, "the checkout's skills/ folder is the install's input"
    home = tmp_path / "home"
    home.mkdir()
    claude_dir = home / ".claude"
    foreign = claude_dir / "skills" / skills[0]
    foreign.mkdir(parents=True)
    (foreign / "SKILL.md").write_text("mine, not kernelpilot's\n")

    first = _install(home, "--no-mcp")
    assert first.returncode == 0, first.stderr + first.stdout
    assert f"skipped {foreign}" in first.stdout
    assert (foreign / "SKILL.md").read_text() == "mine, not kernelpilot's\n" and not foreign.is_symlink()
    for name in skills[1:]:
        link = claude_dir / "skills" / name
        assert link.is_symlink() and link.resolve() == (REPO / "skills" / name).resolve()
        assert (link / "SKILL.md").is_file()
    for name in _commands():
        link = claude_dir / "commands" / name
        assert link.is_symlink() and link.resolve() == (REPO / "skills" / ".commands" / name).resolve()

    snapshot = _tree(home)
    second = _install(home, "--no-mcp")
    assert second.returncode == 0, second.stderr
    assert _tree(home) == snapshot, "a second run changed the installation"
    assert "linked" not in second.stdout

    gone = subprocess.run(
        ["bash", str(INSTALL), "--uninstall"], env=_env(home), capture_output=True, text=True, timeout=120
    )
    assert gone.returncode == 0, gone.stderr
    assert (foreign / "SKILL.md").read_text() == "mine, not kernelpilot's\n"
    assert sorted(p.name for p in (claude_dir / "skills").iterdir()) == [skills[0]]
    # the commands folder was the installer's own: removed once empty; skills/ held the user's skill first
    assert not (claude_dir / "commands").exists()
    assert f"removed empty folder {claude_dir / 'commands'}\n" in gone.stdout
    assert f"removed empty folder {claude_dir / 'skills'}\n" not in gone.stdout


def test_install_then_uninstall_leaves_a_fresh_home_as_it_was(tmp_path):
    """Issue 42: `--uninstall` also removes the empty folders the installer created (~/.claude and below)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# the user's\n")
    before = _tree(home)
    res = _install(home, "--no-mcp")
    assert res.returncode == 0, res.stderr + res.stdout
    assert (home / ".claude" / "skills").is_dir() and (home / ".claude" / "commands").is_dir()
    gone = subprocess.run(
        ["bash", str(INSTALL), "--uninstall"], env=_env(home), capture_output=True, text=True, timeout=120
    )
    assert gone.returncode == 0, gone.stderr
    assert _tree(home) == before, gone.stdout


def test_claude_code_registers_and_connects(tmp_path):
    claude = _need("claude")
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = str(Path(claude).parent)
    res = _install(home, extra_path=bin_dir)
    assert res.returncode == 0, res.stderr + res.stdout
    assert "registered MCP server 'kernelpilot'" in res.stdout
    listing = subprocess.run(
        [claude, "mcp", "list"],
        env=_env(home, bin_dir),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    line = next((ln for ln in listing.stdout.splitlines() if ln.startswith("kernelpilot:")), "")
    assert "Connected" in line, listing.stdout + listing.stderr
    # Claude Code offers the server's MCP prompts as slash commands. Its print mode reports them in the
    # stream-json `init` event before any model call (so no login is needed); blocking MCP start-up makes
    # the server connected by then.
    init_env = {**_env(home, bin_dir), "MCP_CONNECTION_NONBLOCKING": "false"}
    init_env.pop("ANTHROPIC_API_KEY", None)
    session = subprocess.run(
        [claude, "-p", "hi", "--output-format", "stream-json", "--verbose", "--max-turns", "1"],
        env=init_env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    init = next(
        (json.loads(ln) for ln in session.stdout.splitlines() if '"subtype":"init"' in ln.replace(" ", "")),
        None,
    )
    assert init is not None, session.stdout[-2000:] + session.stderr[-2000:]
    assert {"name": "kernelpilot", "status": "connected"} in init["mcp_servers"]
    from kernelpilot.adapters.prompts import PROMPTS

    assert {f"mcp__kernelpilot__{p.name}" for p in PROMPTS} <= set(init["slash_commands"])
    assert "mcp__kernelpilot__spec_lookup" in init["tools"]
    again = _install(home, extra_path=bin_dir)
    assert "already registered: unchanged" in again.stdout
    gone = subprocess.run(
        ["bash", str(INSTALL), "--uninstall"],
        env=_env(home, bin_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "unregistered MCP server kernelpilot" in gone.stdout
    after = subprocess.run(
        [claude, "mcp", "list"],
        env=_env(home, bin_dir),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert "kernelpilot:" not in after.stdout


def test_mcp_inspector_cli_lists_and_calls_tools(tmp_path):
    inspector = _need("mcp-inspector")
    server = [sys.executable, "-m", "kernelpilot.adapters.mcp_server"]
    env = dict(os.environ)
    listed = subprocess.run(
        [inspector, "--cli", *server, "--method", "tools/list"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert "doctor" in names
    called = subprocess.run(
        [
            inspector,
            "--cli",
            *server,
            "--method",
            "tools/call",
            "--tool-name",
            "doctor",
            "--tool-arg",
            "probe_gpus=false",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert called.returncode == 0, called.stderr
    out = json.loads(called.stdout)
    assert not out.get("isError") and "ncu" in json.dumps(out["structuredContent"])
