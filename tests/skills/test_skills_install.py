"""`kernelpilot skills install [--uninstall]`: the package's skills into a Claude profile and out again.

Every test points HOME and CLAUDE_CONFIG_DIR at a temporary folder (the autouse fixture), so none can reach
the real profile; each compares the whole profile tree before and after.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.skills.errors import ClaudeProfileError
from kernelpilot.skills.install import MANIFEST_NAME, install_skills
from kernelpilot.skills.models import SkillsInstallRequest

SOURCE = bundled_dir("skills")
SKILLS = sorted(p.parent.name for p in SOURCE.glob("*/SKILL.md"))
COMMANDS = sorted(p.name for p in (SOURCE / ".commands").glob("*.md"))


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def _tree(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "->" + os.readlink(p) if p.is_symlink() else (p.read_text() if p.is_file() else "dir")
    return out


def test_install_links_every_skill_and_command_from_the_package_and_is_idempotent(home: Path) -> None:
    assert len(SKILLS) >= 6 and len(COMMANDS) >= 4
    first = install_skills(SkillsInstallRequest())
    claude = home / ".claude"
    assert first.config_dir == str(claude)
    for name in SKILLS:
        link = claude / "skills" / name
        assert link.is_symlink() and link.resolve() == (SOURCE / name).resolve()
        assert (link / "SKILL.md").read_text() == (SOURCE / name / "SKILL.md").read_text()
    for name in COMMANDS:
        assert (claude / "commands" / name).resolve() == (SOURCE / ".commands" / name).resolve()
    assert len(first.linked) == len(SKILLS) + len(COMMANDS) and not first.skipped
    assert "claude mcp add --scope user kernelpilot --" in first.mcp_command

    snapshot = _tree(home)
    again = install_skills(SkillsInstallRequest())
    assert _tree(home) == snapshot, "a second run changed the profile"
    assert not again.linked and len(again.unchanged) == len(SKILLS) + len(COMMANDS)


def test_uninstall_restores_the_profile_exactly_including_folders_it_created(home: Path) -> None:
    before = _tree(home)
    install_skills(SkillsInstallRequest())
    assert _tree(home) != before
    gone = install_skills(SkillsInstallRequest(uninstall=True))
    assert _tree(home) == before == {}
    assert str(home / ".claude" / "skills") in gone.removed and str(home / ".claude") in gone.removed
    # a second uninstall finds nothing to do
    assert not install_skills(SkillsInstallRequest(uninstall=True)).removed


def test_foreign_skills_and_other_links_are_left_alone(tmp_path: Path, home: Path) -> None:
    claude = home / ".claude"
    mine = claude / "skills" / SKILLS[0]
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("mine\n")
    checkout = tmp_path / "checkout-skill"
    checkout.mkdir()
    (claude / "commands").mkdir()
    (claude / "commands" / COMMANDS[0]).symlink_to(checkout)  # as ./install.sh links into a checkout
    (claude / "settings.json").write_text("{}\n")
    before = _tree(home)

    res = install_skills(SkillsInstallRequest())
    assert {s.path for s in res.skipped} == {str(mine), str(claude / "commands" / COMMANDS[0])}
    assert (mine / "SKILL.md").read_text() == "mine\n"
    assert os.readlink(claude / "commands" / COMMANDS[0]) == str(checkout)

    install_skills(SkillsInstallRequest(uninstall=True))
    assert _tree(home) == before, "uninstall removed or left something it should not have"


def test_a_link_changed_after_install_survives_uninstall(tmp_path: Path, home: Path) -> None:
    install_skills(SkillsInstallRequest())
    link = home / ".claude" / "skills" / SKILLS[1]
    link.unlink()
    link.symlink_to(tmp_path)
    res = install_skills(SkillsInstallRequest(uninstall=True))
    assert os.readlink(link) == str(tmp_path)
    assert [s.path for s in res.skipped] == [str(link)]
    assert (home / ".claude" / "skills").is_dir()  # not empty: kept
    assert not (home / ".claude" / "commands").exists()  # empty and made by the install: removed


def test_links_of_a_skill_the_package_no_longer_has_are_removed(home: Path) -> None:
    install_skills(SkillsInstallRequest())
    claude = home / ".claude"
    old = claude / "skills" / "retired-skill"
    old.symlink_to(SOURCE / SKILLS[0])
    manifest = claude / MANIFEST_NAME
    record = json.loads(manifest.read_text())
    record["links"][str(old)] = str(SOURCE / SKILLS[0])
    manifest.write_text(json.dumps(record))
    res = install_skills(SkillsInstallRequest())
    assert res.removed == [str(old)] and not old.is_symlink()
    assert str(old) not in json.loads(manifest.read_text())["links"]


def test_config_dir_argument_and_environment_pick_it(tmp_path: Path, home: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "from-env"))
    assert install_skills(SkillsInstallRequest()).config_dir == str(tmp_path / "from-env")
    given = install_skills(SkillsInstallRequest(config_dir=str(tmp_path / "given")))
    assert (tmp_path / "given" / "skills" / SKILLS[0]).is_symlink() and given.config_dir.endswith("given")
    assert not (home / ".claude").exists()


def test_unusable_profile_or_record_is_a_typed_error_with_a_fix(tmp_path: Path, home: Path) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(ClaudeProfileError) as exc:
        install_skills(SkillsInstallRequest(config_dir=str(afile)))
    assert "not a folder" in exc.value.message and exc.value.hint
    claude = home / ".claude"
    claude.mkdir()
    (claude / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(ClaudeProfileError) as exc:
        install_skills(SkillsInstallRequest())
    assert "move" in exc.value.hint
    (claude / MANIFEST_NAME).write_text(json.dumps({"format": 1, "links": {"a": 3}, "dirs": []}))
    with pytest.raises(ClaudeProfileError):
        install_skills(SkillsInstallRequest(uninstall=True))
    (claude / MANIFEST_NAME).unlink()
    (claude / "skills").write_text("not a folder")
    with pytest.raises(ClaudeProfileError) as exc:
        install_skills(SkillsInstallRequest())
    assert str(claude / "skills") in exc.value.message


def test_cli_installs_and_uninstalls(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "cfg"
    res = run_cli("skills", "install", "--config-dir", str(target), "--json")
    assert res.code == 0, res.err
    data = json.loads(res.out)
    assert data["action"] == "install" and len(data["linked"]) == len(SKILLS) + len(COMMANDS)
    text = run_cli("skills", "install", "--uninstall", "--config-dir", str(target))
    assert text.code == 0 and f"removed {target}" in text.out
    assert not target.exists()
    bad = run_cli("skills", "install", "--config-dir", str(tmp_path / "cfg" / "x" / "\x00"))
    assert bad.code != 0 and "Traceback" not in bad.err
