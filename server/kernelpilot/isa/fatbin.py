"""NVIDIA fat binaries: standalone `.fatbin` files and the `.nv_fatbin` section of host executables/libraries.

Layout (as documented by the open-source readers n-eiling/cuda-fatbin-decompression and jiegec/fatbinary,
checked against CUDA 13.0 `fatbinary` output): a 16-byte header (magic 0xBA55ED50, u16 version 1, u16 header
size 16, u64 payload size) followed by entries, each a header (u16 kind 1=PTX 2=ELF, u16, u32 header size,
u64 payload size, u32 compressed size, u32 options offset, u16 minor, u16 major, u32 arch, u32 name offset,
u32 name length, u64 flags, u64 reserved, u64 decompressed size) and its payload. Several fatbins may be
concatenated in one section. Flag 0x2000 marks an LZ4 payload, 0x8000 a ZSTD payload (CUDA 12.8+).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kernelpilot.isa.compress import Scratch, lz4_block_decompress, zstd_decompress, zstd_decompress_into
from kernelpilot.isa.errors import CodeObjectError

FATBIN_MAGIC = 0xBA55ED50
FATBIN_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
KIND_PTX = 1
KIND_ELF = 2

_HDR = struct.Struct("<IHHQ")
_ENT = struct.Struct("<HHIQIIHHIIIQQQ")


@dataclass(frozen=True, slots=True)
class FatEntry:
    fatbin_index: int
    kind: int
    arch: int
    offset: int  # payload offset in the scanned buffer
    size: int  # payload bytes stored (padded)
    compressed_size: int
    decompressed_size: int
    flags: int
    ptx_version: tuple[int, int]

    @property
    def compression(self) -> str | None:
        if self.flags & FLAG_ZSTD:
            return "zstd"
        if self.flags & FLAG_LZ4:
            return "lz4"
        return None

    @property
    def kind_name(self) -> str:
        return {KIND_PTX: "ptx", KIND_ELF: "cubin"}.get(self.kind, "other")

    @property
    def arch_name(self) -> str:
        return f"compute_{self.arch}" if self.kind == KIND_PTX else f"sm_{self.arch}"


def scan_fatbins(buf: memoryview, label: str, base: int = 0, end: int | None = None) -> list[FatEntry]:
    """All entries of the fatbins that follow each other in buf[base:end]."""
    stop = len(buf) if end is None else end
    out: list[FatEntry] = []
    pos = base
    index = 0
    # search the underlying object directly (bytes or mmap) when the view covers it from offset 0: no copies
    obj = buf.obj
    raw = obj if isinstance(obj, bytes | bytearray | mmap.mmap) and len(obj) == len(buf) else None
    while pos + _HDR.size <= stop:
        if raw is not None:
            found = raw.find(FATBIN_MAGIC_BYTES, pos, stop)
        else:
            found = bytes(buf[pos:stop]).find(FATBIN_MAGIC_BYTES)
            found = found + pos if found >= 0 else -1
        if found < 0:
            break
        pos = found
        if pos + _HDR.size > stop:
            raise CodeObjectError(label, f"fatbin header at byte {pos} is truncated")
        _magic, version, hsize, size = _HDR.unpack_from(buf, pos)
        if version != 1 or hsize != _HDR.size:
            pos += 4  # not a header (magic bytes inside other data)
            continue
        p = pos + hsize
        fat_end = p + size
        if fat_end > stop:
            raise CodeObjectError(
                label, f"fatbin at byte {pos} declares {size} bytes of entries but only {stop - p} remain"
            )
        while p < fat_end:
            if p + _ENT.size > fat_end:
                raise CodeObjectError(label, f"fatbin entry header at byte {p} is truncated")
            (kind, _u1, ehs, esz, csz, _opt, minor, major, arch, _no, _nl, flags, _z, dsz) = _ENT.unpack_from(
                buf, p
            )
            if ehs < _ENT.size or p + ehs + esz > fat_end:
                raise CodeObjectError(
                    label,
                    f"fatbin entry at byte {p} has a corrupt size (header {ehs}, "
                    f"payload {esz}, {fat_end - p} bytes left)",
                )
            out.append(FatEntry(index, kind, arch, p + ehs, esz, csz, dsz, flags, (major, minor)))
            p += ehs + esz
        index += 1
        pos = fat_end
    return out


def entry_payload(
    buf: memoryview, ent: FatEntry, label: str, scratch: Scratch | None = None
) -> bytes | memoryview:
    """The entry's payload, decompressed when compressed (raises CodeObjectError if it cannot be); with
    `scratch`, a ZSTD payload may be decoded into it (then valid only until the scratch is used again)."""
    stored = buf[ent.offset : ent.offset + ent.size]
    comp = ent.compression
    if comp is None:
        return stored
    csz = ent.compressed_size or ent.size
    if csz > ent.size:
        raise CodeObjectError(label, f"compressed size {csz} exceeds the stored payload {ent.size}")
    if comp == "lz4":
        return lz4_block_decompress(stored[:csz], ent.decompressed_size, label)
    if scratch is not None:
        return zstd_decompress_into(stored[:csz], ent.decompressed_size, label, scratch)
    return zstd_decompress(stored[:csz], ent.decompressed_size, label)


def iter_ptx_text(payload: bytes | memoryview) -> Iterator[str]:
    yield bytes(payload).rstrip(b"\0").decode("utf-8", "replace")
