"""Clang offload bundles: `__CLANG_OFFLOAD_BUNDLE__` (standalone or in a host ELF `.hip_fatbin` section) and
compressed `CCOB` bundles.

Formats: Clang documentation "Clang Offload Bundler" (https://clang.llvm.org/docs/ClangOffloadBundler.html),
sections "Bundled Binary File Layout" and "Compression and Decompression": magic, u64 entry count, then per
entry u64 offset, u64 size, u64 triple length, triple; compressed: "CCOB", u16 version, u16 method
(0 zlib, 1 zstd), v1: u32 uncompressed size; v2: u32 total size, u32 uncompressed size; v3: u64, u64; then a
u64 hash and the compressed bundle.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kernelpilot.isa.compress import zlib_decompress, zstd_decompress
from kernelpilot.isa.errors import CodeObjectError

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
MAX_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class BundleEntry:
    triple: str
    offset: int
    size: int


def is_bundle(buf: bytes | memoryview) -> bool:
    head = bytes(buf[:24])
    return head == BUNDLE_MAGIC or head[:4] == CCOB_MAGIC


def decompress_ccob(buf: bytes | memoryview, label: str) -> tuple[bytes, str]:
    """Decompressed bundle bytes and the method name; raises CodeObjectError when it cannot."""
    data = bytes(buf)
    if len(data) < 8 or data[:4] != CCOB_MAGIC:
        raise CodeObjectError(label, "not a compressed offload bundle (CCOB magic missing)")
    version, method = struct.unpack_from("<HH", data, 4)
    if version == 1:
        if len(data) < 20:
            raise CodeObjectError(label, "compressed bundle header truncated")
        (usize,) = struct.unpack_from("<I", data, 8)
        start = 20
    elif version == 2:
        if len(data) < 24:
            raise CodeObjectError(label, "compressed bundle header truncated")
        total, usize = struct.unpack_from("<II", data, 8)
        start = 24
        if total > len(data):
            raise CodeObjectError(label, f"compressed bundle says {total} bytes, file has {len(data)}")
    elif version == 3:
        if len(data) < 32:
            raise CodeObjectError(label, "compressed bundle header truncated")
        total, usize = struct.unpack_from("<QQ", data, 8)
        start = 32
        if total > len(data):
            raise CodeObjectError(label, f"compressed bundle says {total} bytes, file has {len(data)}")
    else:
        raise CodeObjectError(label, f"compressed offload bundle version {version} is not known (1-3 are)")
    payload = data[start:]
    if method == 0:
        out = zlib_decompress(payload, usize, label)
        name = "zlib"
    elif method == 1:
        out = zstd_decompress(payload, usize, label)
        name = "zstd"
    else:
        raise CodeObjectError(
            label, f"compressed offload bundle method {method} is not known (0 zlib, 1 zstd)"
        )
    if len(out) != usize:
        raise CodeObjectError(label, f"bundle decompressed to {len(out)} bytes, header says {usize}")
    return out, name


def parse_bundle(buf: bytes | memoryview, label: str) -> list[BundleEntry]:
    mv = memoryview(buf) if not isinstance(buf, memoryview) else buf
    if bytes(mv[:24]) != BUNDLE_MAGIC:
        raise CodeObjectError(label, "not a clang offload bundle (magic missing)")
    if len(mv) < 32:
        raise CodeObjectError(label, "offload bundle header truncated")
    (count,) = struct.unpack_from("<Q", mv, 24)
    if count > MAX_ENTRIES:
        raise CodeObjectError(label, f"offload bundle claims {count} entries (corrupt count)")
    pos = 32
    out: list[BundleEntry] = []
    for i in range(count):
        if pos + 24 > len(mv):
            raise CodeObjectError(label, f"offload bundle entry {i} header truncated")
        off, size, tlen = struct.unpack_from("<QQQ", mv, pos)
        pos += 24
        if tlen > 4096 or pos + tlen > len(mv):
            raise CodeObjectError(label, f"offload bundle entry {i} triple overruns the file")
        triple = bytes(mv[pos : pos + tlen]).decode("utf-8", "replace")
        pos += tlen
        if off + size > len(mv):
            raise CodeObjectError(label, f"offload bundle entry {i} ({triple}) overruns the file")
        out.append(BundleEntry(triple, off, size))
    return out


def bundle_arch(triple: str) -> tuple[str | None, str]:
    """('gfx90a', 'hipv4-amdgcn-amd-amdhsa--gfx90a') for device entries; (None, triple) for host."""
    if "amdgcn" not in triple:
        return None, triple
    proc = triple.split("--", 1)[1] if "--" in triple else triple.rsplit("-", 1)[-1]
    return proc.split(":")[0], triple
