""".ci/run never writes into the real Claude profile (issue 42): its installer steps under a sentinel HOME.

`bash .ci/run --install-step` runs exactly the installer steps of a CI run: `./install.sh --dev --no-mcp`, the
CPU torch, and the README's set-up command (`./install.sh` with the npm `claude` on PATH, which links the
skills and registers the MCP server). The sentinel HOME holds a profile of its own; afterwards every file and
folder in it must be as it was, and the temporary profile .ci/run used must be gone.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.sandbox_home import REPO, sandbox_env


def _snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under root, its content (or link target) and mtime: a rewrite of the same bytes shows."""
    out: dict[str, tuple[str, int]] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        if p.is_symlink():
            body = "->" + os.readlink(p)
        elif p.is_file():
            body = p.read_text(errors="replace")
        else:
            body = "dir"
        out[str(p.relative_to(root))] = (body, st.st_mtime_ns)
    return out


def _sentinel_home(home: Path) -> None:
    (home / ".claude" / "skills" / "mine").mkdir(parents=True)
    (home / ".claude" / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\n---\nthe user's own\n")
    (home / ".claude" / "settings.json").write_text('{"sentinel": true}\n')
    (home / ".claude.json").write_text('{"mcpServers": {}}\n')
    (home / ".bashrc").write_text("# sentinel\n")


@pytest.mark.slow
@pytest.mark.timeout(900)  # builds environments with pip: minutes on a loaded 2-core machine
@pytest.mark.needs_tool("claude")
def test_ci_install_step_changes_nothing_in_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _sentinel_home(home)
    before = _snapshot(home)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = sandbox_env(home)
    del env["CLAUDE_CONFIG_DIR"]  # .ci/run is to set its own: HOME alone is the sentinel
    env["TMPDIR"] = str(tmp)
    run = subprocess.run(
        ["bash", str(REPO / ".ci" / "run"), "--install-step"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # the README's set-up command ran with claude on PATH and registered the server (in the temporary profile)
    assert "registered MCP server 'kernelpilot'" in run.stdout, run.stdout[-3000:]
    assert "compute-bound" in run.stdout  # the main job ran: the roofline verdict of its last lines
    after = _snapshot(home)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"the install step changed the real profile: {changed}"
    assert not list(tmp.glob("kernelpilot-ci-profile.*")), "the temporary profile outlived the run"
