"""A small on-disk cache of the MCP tools' JSON schemas, so a cold server start need not regenerate them.

The key covers everything the schemas derive from: the kernelpilot, mcp and pydantic versions and the
size and mtime of every source file of the package. Writes are atomic; any unreadable or mismatched
cache is ignored (and rewritten), never trusted. Set KERNELPILOT_NO_SCHEMA_CACHE=1 to bypass it.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import OutputPathError

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # kernelpilot/: its sources key the cache


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernelpilot"


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def cache_key() -> str:
    h = hashlib.sha256()
    for dist in ("kernelpilot", "mcp", "pydantic"):
        h.update(f"{dist}={_version(dist)};".encode())
    for path in sorted(_PACKAGE_DIR.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(_PACKAGE_DIR)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:32]


def _path() -> Path:
    return _cache_dir() / f"mcp-schemas-{cache_key()}.json"


def load() -> dict[str, dict[str, Any]] | None:
    if os.environ.get("KERNELPILOT_NO_SCHEMA_CACHE") == "1":
        return None
    try:
        data = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def store(schemas: dict[str, dict[str, Any]]) -> None:
    """Best effort: a read-only home or full disk only costs the next start its speed."""
    if os.environ.get("KERNELPILOT_NO_SCHEMA_CACHE") == "1":
        return
    target = _path()
    try:
        write_text_atomic(target, json.dumps(schemas), mkdir=True)
        for old in target.parent.glob("mcp-schemas-*.json"):  # schemas of other installs/versions
            if old != target:
                old.unlink(missing_ok=True)
    except (OSError, OutputPathError):  # best effort (docstring)
        return
