"""A wheel built from a clean clone works outside any checkout (issue 43).

The wheel is built from a `git clone` of this repository (so only committed files count), installed into a
fresh virtual environment, and used from a folder that is no checkout: the README's main-job command, the MCP
server's tools/list through the official client, and `skills install` into a temporary profile. The wheel
must carry every wiki file, skill, playbook and template (pyproject.toml's force-include into
`kernelpilot/_data`), and installing it must not pull in torch. pip reuses the caller's cache.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tests.sandbox_home import REPO, sandbox_env

# README's main job: its set-up command after `./install.sh && .venv/bin/kernelpilot` (as .ci/run runs it)
MAIN_JOB = shlex.split(
    re.search(r"^\./install\.sh && \.venv/bin/kernelpilot (.+)$", (REPO / "README.md").read_text(), re.M)[1]
)
BUNDLED = ("gpu-wiki-index", "skills", "playbooks", "templates")


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: int = 600) -> str:
    res = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{argv}: {res.stdout[-2000:]}{res.stderr[-2000:]}"
    return res.stdout


async def _tools(server: Path, env: dict[str, str], cwd: Path) -> tuple[set[str], str]:
    params = StdioServerParameters(command=str(server), args=[], env=env, cwd=str(cwd))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        spec = await client.call_tool("spec_lookup", {"gpu": "h100-sxm5", "metric": "bf16_dense_tflops"})
        text = " ".join(getattr(c, "text", "") for c in spec.content)
    return names, text


@pytest.mark.slow
@pytest.mark.timeout(900)  # builds environments with pip: minutes on a loaded 2-core machine
def test_wheel_from_a_clean_clone_works_outside_the_checkout(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    env = sandbox_env(home)
    clone = tmp_path / "clone"
    _run(["git", "clone", "--quiet", str(REPO), str(clone)], env, tmp_path)
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(clone)],
        env,
        tmp_path,
    )
    (wheel,) = dist.glob("kernelpilot-*.whl")

    tracked = _run(["git", "ls-files", *BUNDLED], env, clone).split("\n")
    with zipfile.ZipFile(wheel) as zf:
        inside = set(zf.namelist())
    missing = [f for f in tracked if f and f"kernelpilot/_data/{f}" not in inside]
    assert not missing, f"the wheel lacks {missing[:10]}"
    assert any(f.startswith("skills/.commands/") for f in tracked) and len(tracked) > 50

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env, tmp_path)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], env, elsewhere, 900)
    found = _run(
        [str(venv / "bin" / "python"), "-c", "import importlib.util as u; print(u.find_spec('torch'))"],
        env,
        elsewhere,
    )
    assert found.strip() == "None", "installing the wheel pulled in torch"

    job = _run([str(venv / "bin" / "kernelpilot"), *MAIN_JOB], env, elsewhere)
    assert "<- gpu-wiki-index/nvidia/h100-sxm5.md:L" in job and "compute-bound" in job.lower(), job
    tools, spec = anyio.run(_tools, venv / "bin" / "kernelpilot-mcp", env, elsewhere)
    assert {"doctor", "spec_lookup", "roofline", "toolsets_enable"} <= tools
    assert "bf16_dense_tflops" in spec and "<- gpu-wiki-index/nvidia/h100-sxm5.md:L" in spec, spec

    where = _run([str(venv / "bin" / "kernelpilot"), "skills", "install", "--json"], env, elsewhere)
    assert str(venv) in where and str(REPO) not in where  # the links point into the installed package
    linked = sorted((home / ".claude" / "skills").iterdir())
    assert [p.name for p in linked] == sorted(p.parent.name for p in (clone / "skills").glob("*/SKILL.md"))
    assert all((p / "SKILL.md").is_file() and str(venv) in str(p.resolve()) for p in linked)
    _run([str(venv / "bin" / "kernelpilot"), "skills", "install", "--uninstall"], env, elsewhere)
    assert not (home / ".claude").exists()  # uninstall took out the profile folders it made
