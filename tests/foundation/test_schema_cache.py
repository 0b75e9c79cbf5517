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
