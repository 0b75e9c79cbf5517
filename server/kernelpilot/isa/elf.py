"""ELF files through pyelftools: host executables and libraries (to find their GPU sections) and HSACO
(notes, symbols). Cubins, parsed by the thousand in large libraries, take the fast path in `cubin_elf`.

pyelftools reads lazily from a stream; here the stream is a view of the caller's buffer (often a whole
mmapped library), so nothing is copied. Whatever pyelftools raises on a corrupt file becomes
`CodeObjectError` naming the file.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, NamedTuple, cast

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_E_MACHINE
from elftools.elf.sections import NoteSection, SymbolTableSection

from kernelpilot.isa.errors import CodeObjectError

ELF_MAGIC = b"\x7fELF"
# e_machine values (System V gABI e_machine table, https://refspecs.linuxfoundation.org/elf/gabi4+/)
EM_CUDA = 190  # NVIDIA CUDA architecture
EM_AMDGPU = 224  # AMD GPU architecture
MACHINE_NAMES = {
    62: "x86_64",
    183: "aarch64",
    21: "ppc64",
    EM_CUDA: "cuda",
    EM_AMDGPU: "amdgpu",
    3: "i386",
    40: "arm",
}

# What pyelftools (and the struct/construct layers under it) raise on bytes that are not a sound ELF.
_PARSE_ERRORS = (
    ELFError,
    ConstructError,
    struct.error,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AssertionError,
)


class Section(NamedTuple):
    number: int
    name: str
    type: str  # pyelftools' name, e.g. "SHT_NOTE"; "SHT_<n>" style ints are kept as str(n)
    offset: int
    size: int
    addr: int


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    value: int
    size: int
    shndx: int | str


@dataclass(frozen=True, slots=True)
class Note:
    name: str
    type: int | str
    desc: bytes


def is_elf(buf: bytes | memoryview) -> bool:
    return bytes(buf[:4]) == ELF_MAGIC


class _ViewStream:
    """The file-like object pyelftools reads from, over a buffer without copying it."""

    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else (self.pos + pos if whence == 1 else len(self.buf) + pos)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        start = min(max(self.pos, 0), len(self.buf))
        end = len(self.buf) if n is None or n < 0 else min(start + n, len(self.buf))
        self.pos = end
        return bytes(self.buf[start:end])


class ElfImage:
    """An ELF64 little-endian file over a buffer (bytes, mmap or memoryview); `label` names it in errors."""

    def __init__(self, buf: bytes | memoryview, label: str) -> None:
        self.buf = buf if isinstance(buf, memoryview) else memoryview(buf)
        self.label = label
        n = len(self.buf)
        if n < 4 or bytes(self.buf[:4]) != ELF_MAGIC:
            raise CodeObjectError(label, "not an ELF file (bad magic)")
        ident = bytes(self.buf[:16])
        if n < 64:
            raise CodeObjectError(label, f"truncated ELF header ({n} bytes)")
        if ident[4] != 2:
            raise CodeObjectError(
                label, f"ELF class {ident[4]} is not ELF64; only 64-bit code objects are read"
            )
        if ident[5] != 1:
            raise CodeObjectError(label, "big-endian ELF is not supported")
        self.osabi, self.abiversion = ident[7], ident[8]
        with self._parsing():
            self._elf = ELFFile(cast(IO[bytes], _ViewStream(self.buf)))
            header = self._elf.header
            machine = header["e_machine"]
            self.machine: int = machine if isinstance(machine, int) else ENUM_E_MACHINE[machine]
            self.e_flags: int = header["e_flags"]
            shoff, shnum = header["e_shoff"], self._elf.num_sections()
            if shoff == 0 or shnum == 0:
                raise CodeObjectError(label, "ELF has no section header table (stripped of sections?)")
            table_end = shoff + shnum * header["e_shentsize"]
            if table_end > n:
                raise CodeObjectError(label, f"truncated: section headers end at {table_end}, file has {n}")
            self.sections = [self._section(i, s) for i, s in enumerate(self._elf.iter_sections())]
        self._by_name = {s.name: s for s in reversed(self.sections)}  # the first of a name wins

    @contextlib.contextmanager
    def _parsing(self) -> Iterator[None]:
        try:
            yield
        except _PARSE_ERRORS as exc:
            raise CodeObjectError(self.label, f"corrupt ELF ({type(exc).__name__}: {exc})") from None

    def _section(self, number: int, sec: Any) -> Section:
        h = sec.header
        out = Section(number, sec.name, str(h["sh_type"]), h["sh_offset"], h["sh_size"], h["sh_addr"])
        if out.type != "SHT_NOBITS" and out.type != "SHT_NULL" and out.offset + out.size > len(self.buf):
            raise CodeObjectError(
                self.label,
                f"truncated or corrupt: section {number} spans bytes {out.offset}..{out.offset + out.size}, "
                f"file has {len(self.buf)}",
            )
        return out

    @property
    def machine_name(self) -> str:
        return MACHINE_NAMES.get(self.machine, f"e_machine={self.machine}")

    def section(self, name: str) -> Section | None:
        return self._by_name.get(name)

    def notes(self, sec: Section) -> list[Note]:
        with self._parsing():
            s = self._elf.get_section(sec.number)
            if not isinstance(s, NoteSection):
                return []
            out: list[Note] = []
            for note in s.iter_notes():
                if note["n_offset"] + note["n_size"] > sec.offset + sec.size:
                    raise CodeObjectError(
                        self.label, f"note in {sec.name} overruns its section (corrupt note)"
                    )
                desc = note["n_descdata"]
                out.append(
                    Note(str(note["n_name"]), note["n_type"], desc if isinstance(desc, bytes) else b"")
                )
            return out

    def symbols(self) -> list[Symbol]:
        with self._parsing():
            out: list[Symbol] = []
            for s in self._elf.iter_sections():
                if isinstance(s, SymbolTableSection) and s["sh_type"] == "SHT_SYMTAB":
                    for sym in s.iter_symbols():
                        out.append(Symbol(sym.name, sym["st_value"], sym["st_size"], sym["st_shndx"]))
            return out
