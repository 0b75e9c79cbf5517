"""The pure-Python ZSTD decoder against the C library on varied inputs and levels, and on corrupt input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernelpilot.isa.zstd_py import ZstdError, decompress

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa"


def _inputs() -> list[bytes]:
    rng = random.Random(5)
    return [
        b"",
        b"a" * 1000,
        bytes(rng.randrange(256) for _ in range(3000)),
        bytes(rng.choice(b"abcdefgh \n") for _ in range(200_000)),
        (FX / "nvidia" / "kernels.sm_80.cubin").read_bytes(),
        (FX / "amd" / "k.gfx1201.hsaco").read_bytes(),
    ]


@pytest.mark.parametrize("level", [1, 3, 12, 19])
def test_matches_zstandard(level: int) -> None:
    zstandard = pytest.importorskip("zstandard")
    for data in _inputs():
        assert decompress(zstandard.ZstdCompressor(level=level).compress(data)) == data


def test_real_fatbin_entries_without_c_library() -> None:
    # ZSTD payloads written by CUDA 13 fatbinary (host_app_zstd) decode to valid cubins
    from kernelpilot.isa import fatbin
    from kernelpilot.isa.elf import ElfFile

    data = (FX / "nvidia" / "host_app_zstd").read_bytes()
    elf = ElfFile(data, "host_app_zstd")
    sec = elf.section(".nv_fatbin")
    assert sec is not None
    ents = fatbin.scan_fatbins(memoryview(data), "x", sec.offset, sec.offset + sec.size)
    assert len(ents) == 9 and {e.compression for e in ents} == {"zstd"}
    for e in ents:
        out = decompress(data[e.offset : e.offset + e.compressed_size])
        assert len(out) == e.decompressed_size
        if e.kind == fatbin.KIND_ELF:
            assert out[:4] == b"\x7fELF"


def test_corrupt_streams_raise() -> None:
    zstandard = pytest.importorskip("zstandard")
    plain = _inputs()[4]
    comp = bytearray(zstandard.ZstdCompressor(level=3).compress(plain))
    rng = random.Random(9)
    errors = 0
    for _ in range(25):
        bad = bytearray(comp)
        for _ in range(3):
            bad[rng.randrange(4, len(bad))] = rng.randrange(256)
        try:
            decompress(bytes(bad), max_output=len(plain))
        except ZstdError:
            errors += 1
    assert errors > 0
    with pytest.raises(ZstdError):
        decompress(b"\x00\x01\x02\x03garbage")
    with pytest.raises(ZstdError):
        decompress(bytes(comp[: len(comp) // 2]))
