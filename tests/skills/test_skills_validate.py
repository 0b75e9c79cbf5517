"""Every skill passes the Agent Skills reference validator (`agentskills validate`, PyPI skills-ref)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.host.toolchain import require_tool, run

SKILLS = Path(__file__).resolve().parents[2] / "skills"
SKILL_DIRS = sorted(p for p in SKILLS.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.mark.needs_tool("agentskills")
@pytest.mark.parametrize("skill", SKILL_DIRS, ids=[p.name for p in SKILL_DIRS])
def test_agentskills_validate(skill: Path) -> None:
    result = run([str(require_tool("agentskills")), "validate", str(skill)], timeout_s=60, check=False)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert f"Valid skill: {skill}" in out


@pytest.mark.needs_tool("agentskills")
def test_agentskills_rejects_a_bad_skill(tmp_path: Path) -> None:
    """The validator really validates: a name that differs from its folder fails."""
    bad = tmp_path / "kernel-bad"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: kernel-other\ndescription: x\n---\nbody\n", encoding="utf-8")
    result = run([str(require_tool("agentskills")), "validate", str(bad)], timeout_s=60, check=False)
    assert result.returncode != 0
    assert "must match skill name" in result.stdout + result.stderr
