"""The MCP schema cache gives exactly the tools/list a fresh build gives, and a bad cache is never trusted."""

import anyio
from mcp import Client

from kernelpilot.adapters.mcp_server import build_server
from kernelpilot.foundation import schema_cache


def _listing() -> list[dict]:
    async def main() -> list[dict]:
        async with Client(build_server()) as client:
            return [t.model_dump(mode="json") for t in (await client.list_tools()).tools]

    return anyio.run(main)


def test_cached_listing_equals_fresh_listing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("KERNELPILOT_NO_SCHEMA_CACHE", "1")
    fresh = _listing()
    assert not list(tmp_path.rglob("mcp-schemas-*.json"))
    monkeypatch.delenv("KERNELPILOT_NO_SCHEMA_CACHE")
    first = _listing()  # builds and writes the cache
    files = list(tmp_path.rglob("mcp-schemas-*.json"))
    assert len(files) == 1
    second = _listing()  # served from the cache
    assert fresh == first == second


def test_corrupt_cache_is_ignored_and_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "kernelpilot" / f"mcp-schemas-{schema_cache.cache_key()}.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert schema_cache.load() is None
    tools = _listing()
    assert any(t["name"] == "doctor" for t in tools)
    assert schema_cache.load() is not None


def _checkout(root, monkeypatch, name: str, source: str = "x = 1\n"):
    """A package folder standing in for one clone: its path and sources key its cache entries."""
    pkg = root / name / "kernelpilot"
    pkg.mkdir(parents=True, exist_ok=True)
    mod = pkg / "mod.py"
    if not mod.exists() or mod.read_text() != source:  # rewriting would change the key (mtime)
        mod.write_text(source)
    monkeypatch.setattr(schema_cache, "_PACKAGE_DIR", pkg)
    return pkg


def test_two_checkouts_keep_their_own_entries(tmp_path, monkeypatch):
    """Two clones sharing ~/.cache used to evict each other, so every start rebuilt (issue 42)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELPILOT_NO_SCHEMA_CACHE", raising=False)
    _checkout(tmp_path, monkeypatch, "clone-a")
    schema_cache.store({"a": {"n": 1}})
    _checkout(tmp_path, monkeypatch, "clone-b")
    schema_cache.store({"b": {"n": 2}})
    assert schema_cache.load() == {"b": {"n": 2}}
    _checkout(tmp_path, monkeypatch, "clone-a")
    assert schema_cache.load() == {"a": {"n": 1}}  # still there after clone-b's start
    assert len(list((tmp_path / "cache" / "kernelpilot").glob("mcp-schemas-*.json"))) == 2


def test_a_checkout_prunes_only_its_own_stale_entries(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELPILOT_NO_SCHEMA_CACHE", raising=False)
    folder = tmp_path / "cache" / "kernelpilot"
    _checkout(tmp_path, monkeypatch, "clone-b")
    schema_cache.store({"b": {}})
    (b_entry,) = folder.glob("mcp-schemas-*.json")
    old_clone = folder / "mcp-schemas-0123456789ab-deadbeef.json"  # a clone deleted long ago
    old_clone.write_text("{}")
    month = time.time() - (schema_cache.STALE_DAYS + 1) * 86400
    os.utime(old_clone, (month, month))
    _checkout(tmp_path, monkeypatch, "clone-a")
    schema_cache.store({"a": {}})
    (a_first,) = (p for p in folder.glob("mcp-schemas-*.json") if p != b_entry)
    _checkout(tmp_path, monkeypatch, "clone-a", "x = 2  # edited: a new key\n")
    schema_cache.store({"a2": {}})
    left = set(folder.glob("mcp-schemas-*.json"))
    assert b_entry in left and a_first not in left and not old_clone.exists()
    assert len(left) == 2 and schema_cache.load() == {"a2": {}}
