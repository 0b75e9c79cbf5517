"""The Claude Code plugin (issue 43), through the real clients from npm, with a temporary profile only.

The repository is its own marketplace (`.claude-plugin/marketplace.json`) with one plugin in `plugin/`:
the skills, the slash commands, and the MCP server started by `plugin/bin/kernelpilot-plugin-mcp`, which
builds the plugin's own environment under `${CLAUDE_PLUGIN_DATA}` on first start. Claude Code namespaces
them: skills and commands as `kernelpilot:<name>`, the server as `plugin:kernelpilot:kernelpilot` (tools
`mcp__plugin_kernelpilot_kernelpilot__<tool>`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.sandbox_home import NPM_BIN, REPO, sandbox_env

SKILLS = sorted(p.parent.name for p in (REPO / "skills").glob("*/SKILL.md"))
COMMANDS = sorted(p.stem for p in (REPO / "skills" / ".commands").glob("*.md"))
SERVER = "plugin:kernelpilot:kernelpilot"
TOOL_PREFIX = "mcp__plugin_kernelpilot_kernelpilot__"
# Claude Code's own state, which it rewrites on every start whatever a plugin does.
CLAUDE_STATE = (".claude.json", "backups", "telemetry", "statsig", "shell-snapshots", "todos", "projects")


def _claude(env: dict[str, str], *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    claude = shutil.which("claude", path=env["PATH"])
    assert claude, "claude not on PATH"
    return subprocess.run(
        [claude, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=env["HOME"]
    )


def _tree(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] in CLAUDE_STATE:
            continue
        out[str(rel)] = p.read_text(errors="replace") if p.is_file() else "dir"
    return out


def _orphaned(root: Path) -> set[str]:
    """Plugin versions Claude Code has marked for its own deferred removal (`.orphaned_at`), with parents."""
    out: set[str] = set()
    for marker in (root / "plugins" / "cache").glob("*/*/*/.orphaned_at"):
        version = marker.parent
        out |= {str(p.relative_to(root)) for p in version.rglob("*")} | {str(version.relative_to(root))}
        out |= {str(version.parent.relative_to(root)), str(version.parent.parent.relative_to(root))}
    return out


def test_skill_text_names_nothing_the_plugin_renames():
    """Under the plugin, commands are /kernelpilot:<name> and the tools mcp__plugin_kernelpilot_..: so the
    skills name tools as `mcp: <tool>` and skills by their bare names, which hold under any namespace."""
    texts = {p: p.read_text() for p in (REPO / "skills").rglob("*.md")}
    assert len(texts) >= len(SKILLS) + len(COMMANDS)
    bad = [
        f"{p.relative_to(REPO)}: {m.group(0)}"
        for p, text in texts.items()
        for m in re.finditer(rf"mcp__\w+|(?<![\w/.-])/({'|'.join(COMMANDS)})\b", text)
    ]
    assert not bad, "names that change under the plugin's namespace:\n" + "\n".join(bad)
    # the checker sees such a name when there is one
    assert re.search(rf"(?<![\w/.-])/({'|'.join(COMMANDS)})\b", f"then run /{COMMANDS[0]} here")


@pytest.mark.needs_tool("claude")
def test_plugin_and_marketplace_manifests_validate(tmp_path: Path):
    env = sandbox_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    for target in (REPO, REPO / "plugin"):
        res = _claude(env, "plugin", "validate", "--strict", str(target), timeout=120)
        assert res.returncode == 0 and "Validation passed" in res.stdout, res.stdout + res.stderr
    manifest = json.loads((REPO / "plugin" / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["version"] in (REPO / "pyproject.toml").read_text()  # one version for plugin and package
    assert [p["source"] for p in market["plugins"]] == ["./plugin"]
    # the check fails on a broken manifest
    broken = tmp_path / "broken"
    shutil.copytree(REPO / "plugin" / ".claude-plugin", broken / ".claude-plugin")
    (broken / ".claude-plugin" / "plugin.json").write_text(json.dumps({**manifest, "name": "Not A Name!"}))
    res = _claude(env, "plugin", "validate", str(broken), timeout=120)
    assert res.returncode != 0, res.stdout


def _server_log(home: Path) -> str:
    """What Claude Code logged of the plugin's server (its stderr: the launcher's steps, pip's errors)."""
    logs = sorted(home.glob(".cache/claude-cli-nodejs/*/mcp-logs-plugin-kernelpilot-kernelpilot/*.jsonl"))
    return "\n".join(p.read_text(errors="replace")[-4000:] for p in logs[-2:])


def _init_event(env: dict[str, str]) -> dict:
    """The stream-json `init` event of a print-mode session: reported before any model call (no login)."""
    run_env = {**env, "MCP_CONNECTION_NONBLOCKING": "false"}
    session = _claude(
        run_env, "-p", "hi", "--output-format", "stream-json", "--verbose", "--max-turns", "1", timeout=300
    )
    init = next(
        (json.loads(ln) for ln in session.stdout.splitlines() if '"subtype":"init"' in ln.replace(" ", "")),
        None,
    )
    assert init is not None, session.stdout[-2000:] + session.stderr[-2000:]
    return init


def _inspector_tools(env: dict[str, str], data: Path) -> set[str]:
    """tools/list through the MCP Inspector CLI of the server started as the plugin starts it."""
    launcher = REPO / "plugin" / "bin" / "kernelpilot-plugin-mcp"
    run_env = {**env, "CLAUDE_PLUGIN_ROOT": str(REPO / "plugin"), "CLAUDE_PLUGIN_DATA": str(data)}
    listed = subprocess.run(
        [str(NPM_BIN / "mcp-inspector"), "--cli", "python3", str(launcher), "--method", "tools/list"],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=env["HOME"],
    )
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    return {t["name"] for t in json.loads(listed.stdout)["tools"]}


@pytest.mark.slow
@pytest.mark.timeout(900)  # builds environments with pip: minutes on a loaded 2-core machine
@pytest.mark.needs_tool("claude", "mcp-inspector")
def test_plugin_installs_lists_connects_and_uninstalls_cleanly(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    # the first start builds the plugin's environment: minutes on a loaded machine
    env = {**sandbox_env(home), "MCP_TIMEOUT": "600000", "MCP_CONNECT_TIMEOUT_MS": "600000"}
    config = Path(env["CLAUDE_CONFIG_DIR"])
    assert _claude(env, "plugin", "list").returncode == 0  # Claude Code makes its config folder
    before = _tree(config)

    added = _claude(env, "plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0 and "kernelpilot" in added.stdout, added.stdout + added.stderr
    installed = _claude(env, "plugin", "install", "kernelpilot@kernelpilot")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = _claude(env, "plugin", "list", "--json")
    assert any(p.get("id") == "kernelpilot@kernelpilot" for p in json.loads(listed.stdout)), listed.stdout

    servers = _claude(env, "mcp", "list")
    line = next((ln for ln in servers.stdout.splitlines() if ln.startswith(SERVER + ":")), "")
    assert "Connected" in line, servers.stdout + servers.stderr + _server_log(home)
    data = config / "plugins" / "data" / "kernelpilot-kernelpilot"
    assert len(list(data.glob("venv-*/.kernelpilot-plugin-stamp"))) == 1  # the plugin's own environment

    init = _init_event(env)
    assert {f"kernelpilot:{s}" for s in SKILLS} <= set(init["skills"]), init["skills"]
    assert {f"kernelpilot:{c}" for c in COMMANDS} <= set(init["slash_commands"]), init["slash_commands"]
    assert {"name": SERVER, "status": "connected"} in init["mcp_servers"], _server_log(home)
    assert {f"{TOOL_PREFIX}spec_lookup", f"{TOOL_PREFIX}roofline"} <= set(init["tools"])

    tools = _inspector_tools(env, data)
    assert {"doctor", "spec_lookup", "roofline", "toolsets_enable"} <= tools

    gone = _claude(env, "plugin", "uninstall", "kernelpilot@kernelpilot")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert _claude(env, "plugin", "marketplace", "remove", "kernelpilot").returncode == 0
    assert not data.exists(), "uninstall left the plugin's environment"
    after = _tree(config)
    changed = [k for k in before if after.get(k) != before[k]]
    assert not changed, f"uninstall changed what was there: {changed}"
    left = set(after) - set(before) - _orphaned(config)
    ours = [k for k in left if "kernelpilot" in k or "kernelpilot" in after[k]]
    assert not ours, f"uninstall left kernelpilot's traces: {ours}"
    assert os.environ.get("HOME") != str(home)  # the real HOME was never replaced in this process
