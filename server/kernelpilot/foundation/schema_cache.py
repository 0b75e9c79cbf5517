"""A small on-disk cache of the MCP tools' JSON schemas, so a cold server start need not regenerate them.

The key covers everything the schemas derive from: the kernelpilot, mcp and pydantic versions and the
size and mtime of every source file of the package. Writes are atomic; any unreadable or mismatched
cache is ignored (and rewritten), never trusted. Set KERNELPILOT_NO_SCHEMA_CACHE=1 to bypass it.

Each checkout (package folder) has its own entries, `mcp-schemas-<checkout>-<key>.json`, and a store prunes
only its own stale ones: two clones or installs sharing one cache folder used to delete each other's entry
on every start, so each start rebuilt the schemas (issue 42). Entries of any checkout untouched for
`STALE_DAYS` go too, so deleted clones do not pile up.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
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


STALE_DAYS = 30


def checkout_id() -> str:
    """Which installed copy of the package this is: its folder's path, hashed."""
    return hashlib.sha256(str(_PACKAGE_DIR).encode()).hexdigest()[:12]


def _path() -> Path:
    return _cache_dir() / f"mcp-schemas-{checkout_id()}-{cache_key()}.json"


def _prune(target: Path) -> None:
    """This checkout's other entries (older sources), and any entry not written for STALE_DAYS."""
    mine = f"mcp-schemas-{checkout_id()}-"
    cutoff = time.time() - STALE_DAYS * 86400
    for old in target.parent.glob("mcp-schemas-*.json"):
        if old == target:
            continue
        try:
            if old.name.startswith(mine) or old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)
        except OSError:  # another process pruned it first, or it is not ours to remove: leave it
            continue


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
        _prune(target)
    except (OSError, OutputPathError):  # best effort (docstring)
        return
