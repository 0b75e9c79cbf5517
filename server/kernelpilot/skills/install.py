"""Link the installed package's skills and slash commands into a Claude Code profile, and take them out again.

Each skill folder becomes `<config>/skills/<name>` and each `skills/.commands/<name>.md` becomes
`<config>/commands/<name>.md`, as symbolic links into the package (`bundled_dir("skills")`), so upgrading the
package upgrades the skills. What a run made (links with their targets, folders it created) is recorded in
`<config>/.kernelpilot-skills-manifest.json`; uninstall removes exactly those links when they still point
where they were made to point, then the folders it created once they are empty. A path that exists and is
not one of its links (a user's own skill, `./install.sh`'s link into a checkout) is left alone and named.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.foundation.validation import path_kind
from kernelpilot.skills.errors import ClaudeProfileError
from kernelpilot.skills.models import SkillsInstallRequest, SkillsInstallResult, SkippedPath

MANIFEST_NAME = ".kernelpilot-skills-manifest.json"
MANIFEST_FORMAT = 1


@dataclass
class _Record:
    """What earlier runs made: link path -> the target it was made with, and the folders made, in order."""

    links: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)

    def dumps(self) -> str:
        data = {"format": MANIFEST_FORMAT, "links": dict(sorted(self.links.items())), "dirs": self.dirs}
        return json.dumps(data, indent=2) + "\n"


def claude_config_dir(given: str | None) -> Path:
    """The profile: the given folder, else `$CLAUDE_CONFIG_DIR`, else `~/.claude` (Claude Code's order)."""
    text = given or os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(text).expanduser().absolute()


def _read_record(path: Path) -> _Record:
    if not path.exists():
        return _Record()
    hint = f"it is not kernelpilot's install record: move {path} away and re-run (links it named stay)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ClaudeProfileError(f"cannot read {path}: {exc}", hint) from exc
    links, dirs = data.get("links") if isinstance(data, dict) else None, data.get("dirs", [])
    ok = (
        isinstance(data, dict)
        and data.get("format") == MANIFEST_FORMAT
        and isinstance(links, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in links.items())
        and isinstance(dirs, list)
        and all(isinstance(d, str) for d in dirs)
    )
    if not ok:
        raise ClaudeProfileError(f"{path} is not a format-{MANIFEST_FORMAT} skills install record", hint)
    return _Record(links=dict(links or {}), dirs=list(dirs))


def _wanted(source: Path) -> list[tuple[str, Path]]:
    """(path relative to the profile, what it links to) for every skill and slash command in the package."""
    out = [(f"skills/{d.name}", d) for d in sorted(source.iterdir()) if (d / "SKILL.md").is_file()]
    commands = source / ".commands"
    if commands.is_dir():
        out += [(f"commands/{f.name}", f) for f in sorted(commands.glob("*.md")) if f.is_file()]
    return out


def _make_dirs(root: Path, record: _Record) -> None:
    """The profile's folders that are missing, outermost first (each recorded, so uninstall can remove it)."""
    missing = [p for p in (root, *root.parents) if not p.exists() and not p.is_symlink()]
    for folder in (*reversed(missing[1:]), root, root / "skills", root / "commands"):
        if folder.is_dir():
            continue
        if folder.exists() or folder.is_symlink():
            hint = "move it away, or pass --config-dir with another folder"
            raise ClaudeProfileError(f"{folder} exists and is not a folder", hint)
        try:
            folder.mkdir()
        except OSError as exc:
            hint = "check the folder's permissions, or pass --config-dir"
            raise ClaudeProfileError(f"cannot create {folder}: {exc.strerror}", hint) from exc
        if str(folder) not in record.dirs:
            record.dirs.append(str(folder))


def _link_one(dst: Path, src: Path, record: _Record, result: SkillsInstallResult) -> None:
    key, target = str(dst), str(src)
    if dst.is_symlink():
        current = os.readlink(dst)
        if current == target:
            result.unchanged.append(key)
            return
        if record.links.get(key) != current:
            result.skipped.append(
                SkippedPath(
                    path=key,
                    reason=f"a link to {current} that this command did not make (./install.sh's link into a "
                    "checkout? run ./install.sh --uninstall first); left untouched",
                )
            )
            return
        _unlink(dst)  # our own link from an earlier package location: re-point it
    elif dst.exists():
        result.skipped.append(
            SkippedPath(path=key, reason="exists, not made by kernelpilot: left untouched (move it away)")
        )
        return
    try:
        dst.symlink_to(src, target_is_directory=src.is_dir())
    except OSError as exc:
        raise ClaudeProfileError(
            f"cannot create the link {dst}: {exc.strerror}", "check the folder's permissions"
        ) from exc
    record.links[key] = target
    result.linked.append(key)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError as exc:
        hint = "check the folder's permissions"
        raise ClaudeProfileError(f"cannot remove {path}: {exc.strerror}", hint) from exc


def _drop_stale(root: Path, wanted: set[str], record: _Record, result: SkillsInstallResult) -> None:
    """Links an earlier version made for a skill this package no longer has."""
    for key, target in sorted(record.links.items()):
        if key in wanted:
            continue
        path = Path(key)
        if path.is_symlink() and os.readlink(path) == target:
            _unlink(path)
            result.removed.append(key)
        del record.links[key]


def _mcp_command() -> str:
    script = Path(sysconfig.get_path("scripts")) / "kernelpilot-mcp"
    server = [str(script)] if script.is_file() else [sys.executable, "-m", "kernelpilot.adapters.mcp_server"]
    return shlex.join(["claude", "mcp", "add", "--scope", "user", "kernelpilot", "--", *server])


def _install(root: Path, source: Path, result: SkillsInstallResult) -> None:
    manifest = root / MANIFEST_NAME
    record = _read_record(manifest)
    before = record.dumps() if manifest.exists() else ""
    _make_dirs(root, record)
    wanted = _wanted(source)
    for rel, src in wanted:
        _link_one(root / rel, src, record, result)
    _drop_stale(root, {str(root / rel) for rel, _ in wanted}, record, result)
    if record.dumps() != before:
        write_text_atomic(manifest, record.dumps())


def _uninstall(root: Path, result: SkillsInstallResult) -> None:
    manifest = root / MANIFEST_NAME
    record = _read_record(manifest)
    for key, target in sorted(record.links.items()):
        path = Path(key)
        if path.is_symlink() and os.readlink(path) == target:
            _unlink(path)
            result.removed.append(key)
        elif path.exists() or path.is_symlink():
            result.skipped.append(SkippedPath(path=key, reason="changed since it was installed: left alone"))
    manifest.unlink(missing_ok=True)
    for folder in map(Path, reversed(record.dirs)):
        if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
            folder.rmdir()
            result.removed.append(str(folder))


def install_skills(req: SkillsInstallRequest) -> SkillsInstallResult:
    """Install (or with `uninstall`, remove) the skill and command links; a repeat run changes nothing."""
    root = claude_config_dir(req.config_dir)
    source = bundled_dir("skills")
    result = SkillsInstallResult(
        action="uninstall" if req.uninstall else "install",
        config_dir=str(root),
        source=str(source),
        manifest=str(root / MANIFEST_NAME),
        mcp_command=_mcp_command(),
    )
    kind = path_kind(root)  # never raises: a name too long or a link loop is a kind (issue 41)
    if kind not in ("missing", "directory"):
        raise ClaudeProfileError(
            f"{str(root)[:300]} is not a folder ({kind})", "pass --config-dir with a Claude config folder"
        )
    if req.uninstall:
        _uninstall(root, result)
    else:
        _install(root, source, result)
    return result
