"""The forked-worker pool that reads large fatbins: same kernels, entries and typed errors as the in-process
path (forced on for the small fixtures by lowering its threshold), and the fallback where it cannot run."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.isa import fatbin, loader
from kernelpilot.isa.elf import ElfImage
from kernelpilot.isa.errors import CodeObjectError

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa" / "nvidia"
# Justified skip that cannot happen in CI: Linux (CI's platform) always offers fork; Windows has none.
needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork start method here"
)


def _snapshot(path: Path) -> tuple[Any, ...]:
    got = loader.load(path)
    return (
        [(k.model_dump(), k.model_fields_set) for k in got.kernels],
        [e.model_dump() for e in got.entries],
        got.warnings,
        sorted(got.payloads),
    )


@needs_fork
@pytest.mark.parametrize("name", ["host_app", "host_app_zstd", "host_app.fatbin", "host_app_lz4.fatbin"])
def test_pool_matches_in_process(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "POOL_CHUNK", 2)
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 10**9)
    plain = _snapshot(FX / name)
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 1)
    pooled = _snapshot(FX / name)
    assert plain[0] and pooled == plain


def _corrupt_zstd_copy(tmp_path: Path) -> Path:
    data = bytearray((FX / "host_app_zstd").read_bytes())
    sec = ElfImage(bytes(data), "x").section(".nv_fatbin")
    assert sec is not None
    ents = fatbin.scan_fatbins(memoryview(bytes(data)), "x", sec.offset, sec.offset + sec.size)
    victim = [e for e in ents if e.kind == fatbin.KIND_ELF and e.compression == "zstd"][-1]
    data[victim.offset : victim.offset + 4] = b"\0\0\0\0"  # no longer a ZSTD frame
    out = tmp_path / "host_app_zstd_bad"
    out.write_bytes(bytes(data))
    return out


@needs_fork
def test_pool_worker_error_is_the_same_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _corrupt_zstd_copy(tmp_path)
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 10**9)
    with pytest.raises(CodeObjectError) as plain:
        loader.load(bad)
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 1)
    with pytest.raises(CodeObjectError) as pooled:
        loader.load(bad)
    assert "ZSTD payload does not decode" in pooled.value.message
    assert pooled.value.message == plain.value.message


def test_pool_falls_back_without_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 1)
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    todo = [(0, fatbin.FatEntry(0, 2, 90, 0, 0, 0, 0, 0, (0, 0)), "e")]
    assert loader._fork_pool(memoryview(b""), "x", todo, [todo]) is None
    got = loader.load(FX / "host_app_zstd")
    assert any(k.is_entry for k in got.kernels)


def _die(chunk: object) -> object:
    os._exit(3)  # a worker killed mid-way (e.g. by the OOM killer)


@needs_fork
def test_broken_pool_falls_back_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 10**9)
    plain = _snapshot(FX / "host_app_zstd")
    monkeypatch.setattr(loader, "POOL_MIN_ENTRIES", 1)
    monkeypatch.setattr(loader, "POOL_CHUNK", 2)
    monkeypatch.setattr(loader, "_worker_rows", _die)
    assert _snapshot(FX / "host_app_zstd") == plain


def _zstd_entries() -> tuple[memoryview, list[fatbin.FatEntry]]:
    data = memoryview((FX / "host_app_zstd").read_bytes())
    sec = ElfImage(data, "x").section(".nv_fatbin")
    assert sec is not None
    ents = fatbin.scan_fatbins(data, "x", sec.offset, sec.offset + sec.size)
    return data, [e for e in ents if e.compression == "zstd"]


def test_scratch_decompression_equals_plain_and_checks_sizes() -> None:
    from kernelpilot.isa import compress

    data, ents = _zstd_entries()
    assert len(ents) >= 2
    scratch = compress.Scratch()
    for e in sorted(ents, key=lambda e: e.decompressed_size) + ents:  # grows, then reuses the buffer
        plain = fatbin.entry_payload(data, e, "x")
        assert bytes(fatbin.entry_payload(data, e, "x", scratch)) == bytes(plain)
    e = ents[0]
    stored = data[e.offset : e.offset + e.compressed_size]
    for wrong in (e.decompressed_size - 1, e.decompressed_size + 1):
        with pytest.raises(CodeObjectError, match="the container says"):
            compress.zstd_decompress_into(stored, wrong, "x", scratch)
    with pytest.raises(CodeObjectError, match="ZSTD payload does not decode"):
        compress.zstd_decompress_into(b"\0\0\0\0" + bytes(stored[4:]), e.decompressed_size, "x", scratch)


def test_chunks_cover_every_entry_largest_first() -> None:
    sizes = [5 << 20, 300 << 20, 1, 40 << 20, *([1 << 20] * 60)]
    todo = [
        (i, fatbin.FatEntry(0, 2, 90, 0, 10, 10, s, fatbin.FLAG_ZSTD, (0, 0)), f"e{i}")
        for i, s in enumerate(sizes)
    ]
    chunks = loader._chunks(todo)
    assert sorted(t for c in chunks for t in c) == sorted(todo)
    assert chunks[0] == [todo[1]] and chunks[1] == [todo[3]]  # the huge ones alone, first
    firsts = [c[0][1].decompressed_size for c in chunks]
    assert firsts == sorted(firsts, reverse=True)
    for c in chunks:
        assert len(c) <= loader.POOL_CHUNK
        assert len(c) == 1 or sum(t[1].decompressed_size for t in c) <= loader.POOL_CHUNK_BYTES


def test_gc_paused_restores_state_and_ages_what_it_built() -> None:
    import gc

    assert gc.isenabled()
    with loader.gc_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(2000)]
    assert gc.isenabled()
    young = {id(o) for o in gc.get_objects(generation=0)}
    assert id(built) not in young and not any(id(b) in young for b in built)
    assert any(o is built for o in gc.get_objects(generation=2))
    gc.disable()
    try:
        with loader.gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_gc_paused_leaves_an_application_freeze_alone() -> None:
    import gc

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with loader.gc_paused():
            _ = [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_worker_count_follows_the_affinity_mask_and_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(3)), raising=False)
    assert loader._usable_cores() == 3  # e.g. a container or `taskset` narrowed to 3 cores
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(128)), raising=False)
    assert loader._usable_cores() == loader.POOL_MAX_WORKERS
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert loader._usable_cores() == 1


STRESS = """
import sys, threading
from kernelpilot.isa import fatbin
from kernelpilot.isa.elf import ElfImage
data = memoryview(open(sys.argv[1], "rb").read())
sec = ElfImage(data, "x").section(".nv_fatbin")
ents = [e for e in fatbin.scan_fatbins(data, "x", sec.offset, sec.offset + sec.size) if e.compression]
want = [bytes(fatbin.entry_payload(data, e, "x")) for e in ents]
bad = []
def work():
    for _ in range(int(sys.argv[2])):
        for e, w in zip(ents, want):
            try:
                if bytes(fatbin.entry_payload(data, e, "x")) != w:
                    bad.append(e)
            except Exception:  # a decoder's state trampled by another thread: "corrupt" data
                bad.append(e)
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(ents), len(bad))
"""


def test_concurrent_decompression_from_many_threads() -> None:
    """The prefetch threads (and a threaded host such as the MCP server) decompress at the same time: one
    shared zstandard decompressor crashed the process or reported corrupt data here; one per thread does
    not. Run in a child process, so a crash fails this test instead of the whole run."""
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(Path(loader.__file__).resolve().parents[2]))
    got = subprocess.run(
        [sys.executable, "-c", STRESS, str(FX / "host_app_zstd"), "600"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert got.returncode == 0, got.stderr[-2000:]
    n, bad = map(int, got.stdout.split())
    assert n >= 8 and bad == 0


def test_mcp_isa_resources_equals_the_cli_json() -> None:
    """Through the official MCP client: the structured result of isa_resources (kernels built by the quick
    constructor, in the server's tool thread) is the CLI's JSON to the letter."""
    import json
    import subprocess
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    path = str(FX / "host_app_zstd")
    cli = subprocess.run(
        [sys.executable, "-m", "kernelpilot", "--json", "isa", "resources", path], capture_output=True
    )
    assert cli.returncode == 0, cli.stderr
    want = json.loads(cli.stdout)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "kernelpilot.adapters.mcp_server", "--toolsets", "isa"]
    )

    async def main() -> Any:
        async with Client(server) as client:
            got = await client.call_tool("isa_resources", {"file": path})
            assert not got.is_error
            return got.structured_content

    got = anyio.run(main)
    assert got == want and len(got["kernels"]) >= 8
