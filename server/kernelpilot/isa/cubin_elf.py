"""The fast path for cubins only: a bounds-checked ELF64 little-endian section-table reader.

Every other ELF (host executables and libraries, HSACO) goes through pyelftools (`isa.elf`). A large
library holds thousands of cubins (libcublasLt.so.13: 5,367), each parsed once: measured on 1,500 of them,
pyelftools took 922 us per cubin for the section table alone, this reader 80 us for the whole parse
including the attributes (`cubin_rows`), i.e. +4.9 s CPU per libcublasLt read (numbers in the readers
branch's report; `bench/isa_resources_bench.py` times the whole CLI). Strict: every offset is checked
against the buffer, so a truncated or corrupt cubin raises `CodeObjectError` naming it.
"""

from __future__ import annotations

import itertools
import struct
from typing import NamedTuple

from kernelpilot.isa.elf import ELF_MAGIC, MACHINE_NAMES
from kernelpilot.isa.errors import CodeObjectError

# ELF constants (System V ABI, "Sections" chapter, https://refspecs.linuxfoundation.org/elf/gabi4+/)
SHT_NOBITS = 8

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")


class Section(NamedTuple):
    """One section header (a NamedTuple: cheap to build for the ~10^5 sections of a large library)."""

    number: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class CubinElf:
    """A cubin's ELF64 LE header and section table over a buffer; `label` names it in errors."""

    def __init__(self, buf: bytes | memoryview, label: str) -> None:
        self.buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
        self.label = label
        n = len(self.buf)
        if n < 4 or bytes(self.buf[:4]) != ELF_MAGIC:
            raise CodeObjectError(label, "not an ELF file (bad magic)")
        if n < _EHDR.size:
            raise CodeObjectError(label, f"truncated ELF header ({n} bytes)")
        ident = bytes(self.buf[:16])
        if ident[4] != 2:
            raise CodeObjectError(
                label, f"ELF class {ident[4]} is not ELF64; only 64-bit code objects are read"
            )
        if ident[5] != 1:
            raise CodeObjectError(label, "big-endian ELF is not supported")
        self.osabi = ident[7]
        self.abiversion = ident[8]
        (
            _,
            self.e_type,
            self.machine,
            _ver,
            _entry,
            _phoff,
            shoff,
            self.e_flags,
            _ehsize,
            _phentsize,
            _phnum,
            shentsize,
            shnum,
            shstrndx,
        ) = _EHDR.unpack_from(self.buf, 0)
        if shoff == 0 or shnum == 0:
            raise CodeObjectError(label, "ELF has no section header table (stripped of sections?)")
        if shentsize != _SHDR.size:
            raise CodeObjectError(label, f"unexpected section header size {shentsize}")
        if shoff + shnum * shentsize > n:
            raise CodeObjectError(
                label, f"truncated: section headers end at {shoff + shnum * shentsize}, file has {n} bytes"
            )
        raw = list(_SHDR.iter_unpack(self.buf[shoff : shoff + shnum * shentsize]))
        if shstrndx >= shnum:
            raise CodeObjectError(label, f"section-name table index {shstrndx} out of range")
        str_off, str_size = raw[shstrndx][4], raw[shstrndx][5]
        self._check(str_off, str_size, "section-name table")
        names = bytes(self.buf[str_off : str_off + str_size])
        # offset -> name for every string in the table at once (section names rarely share suffixes)
        parts = names.decode("utf-8", "replace").split("\0")
        if names.isascii():
            offsets = itertools.accumulate([len(part) + 1 for part in parts], initial=0)
        else:
            offsets = itertools.accumulate(
                [
                    len(part.encode("utf-8", "replace")) + 1 if not part.isascii() else len(part) + 1
                    for part in parts
                ],
                initial=0,
            )
        by_off = dict(zip(offsets, parts, strict=False))
        for i, r in enumerate(raw):
            if r[1] != SHT_NOBITS and r[1] != 0 and r[4] + r[5] > n:
                self._check(r[4], r[5], f"section {i}")
        get = by_off.get
        self.section_names: list[str] = [get(r[0]) or _cstr(names, r[0]) for r in raw]
        # raw header tuples: (name_off, type, flags, addr, offset, size, link, info, align, entsize)
        self.raw_sections = raw
        self._sections: list[Section] | None = None
        self._by_name: dict[str, Section] | None = None

    @property
    def sections(self) -> list[Section]:
        if self._sections is None:
            self._sections = [
                Section(i, nm, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[9])
                for i, (nm, r) in enumerate(zip(self.section_names, self.raw_sections, strict=True))
            ]
        return self._sections

    @property
    def machine_name(self) -> str:
        return MACHINE_NAMES.get(self.machine, f"e_machine={self.machine}")

    def _check(self, off: int, size: int, what: str) -> None:
        if off < 0 or size < 0 or off + size > len(self.buf):
            raise CodeObjectError(
                self.label,
                f"truncated or corrupt: {what} spans bytes {off}..{off + size}, file has {len(self.buf)}",
            )

    def section(self, name: str) -> Section | None:
        if self._by_name is None:
            self._by_name = {s.name: s for s in self.sections}
        return self._by_name.get(name)

    def raw_data(self, index: int) -> memoryview:
        r = self.raw_sections[index]
        if r[1] == SHT_NOBITS:
            return memoryview(b"")
        return self.buf[r[4] : r[4] + r[5]]

    def data(self, sec: Section) -> memoryview:
        if sec.type == SHT_NOBITS:
            return memoryview(b"")
        return self.buf[sec.offset : sec.offset + sec.size]


def _cstr(table: bytes, off: int) -> str:
    if off >= len(table):
        return ""
    end = table.find(b"\0", off)
    if end < 0:
        end = len(table)
    return table[off:end].decode("utf-8", "replace")
