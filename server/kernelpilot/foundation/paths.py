"""Where the bundled data lives: the wiki, playbooks, templates and skills.

In a wheel they are copied to `kernelpilot/_data/<name>`; in a source checkout or editable install
they are the repository's top-level folders. Everything else finds them through here.
"""

from __future__ import annotations

from pathlib import Path

from kernelpilot.foundation.errors import InputFileError

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # kernelpilot/
_REPO_ROOT = _PACKAGE_DIR.parent.parent

BUNDLED_NAMES = ("gpu-wiki-index", "playbooks", "templates", "skills")


def bundled_dir(name: str) -> Path:
    """Return the directory of one bundled data folder (`gpu-wiki-index`, `playbooks`, ...)."""
    if name not in BUNDLED_NAMES:
        raise ValueError(f"unknown bundled folder {name!r}")
    for candidate in (_PACKAGE_DIR / "_data" / name, _REPO_ROOT / name):
        if candidate.is_dir():
            return candidate
    raise InputFileError(
        f"bundled folder {name!r} not found next to the kernelpilot package",
        "reinstall kernelpilot (./install.sh) or run from a full source checkout",
    )


def safe_join(root: Path, relative: str) -> Path:
    """Join a user-supplied relative path under `root`, refusing escapes (`..`, absolute, symlinks out)."""
    if not relative or relative.startswith(("/", "\\")) or "\x00" in relative:
        raise InputFileError(f"path {relative!r} must be relative to {root.name}/", "give a path inside it")
    root_resolved = root.resolve()
    target = (root_resolved / relative).resolve()
    if target != root_resolved and root_resolved not in target.parents:
        raise InputFileError(f"path {relative!r} escapes {root.name}/", "remove '..' components")
    return target
