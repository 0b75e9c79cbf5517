"""NVIDIA cubin reader: per-kernel resources from `.nv.info` / `.nv.info.<kernel>` attributes and headers.

Attribute ids (EIATTR_*) and value formats (EIFMT_*) are NVIDIA's cubin ELF conventions as printed by
`cuobjdump -elf` (names checked against CUDA 13.0 cuobjdump output on the fixtures in tests/fixtures/isa).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from kernelpilot.isa.cubin_elf import SHT_NOBITS, CubinElf
from kernelpilot.isa.elf import EM_CUDA
from kernelpilot.isa.errors import CodeObjectError
from kernelpilot.isa.models import KernelResources, kernels_from_values

# EIFMT_* value formats of an .nv.info record: <u8 format><u8 attribute><payload>
EIFMT_NVAL = 1  # no value (2 padding bytes)
EIFMT_BVAL = 2  # 1-byte value (+1 pad)
EIFMT_HVAL = 3  # 2-byte value
EIFMT_SVAL = 4  # u16 size, then `size` bytes

# EIATTR_* ids (names as printed by `cuobjdump -elf`, CUDA 13.0)
EIATTR_MAX_THREADS = 0x05
EIATTR_PARAM_CBANK = 0x0A
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_CRS_STACK_SIZE = 0x1E
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_WMMA_USED = 0x2B
EIATTR_REGCOUNT = 0x2F
EIATTR_CTA_PER_CLUSTER = 0x3D
EIATTR_NUM_BARRIERS = 0x4C

# ELF header conventions of cubins: OS/ABI byte and where the SM number sits in e_flags.
ELFOSABI_CUDA_V1 = 0x33  # older cubins: SM in e_flags bits 0..7
ELFOSABI_CUDA_V2 = 0x41  # CUDA 12.8+/13 cubins (ABI version 8): SM in e_flags bits 8..15

# System-reserved shared memory per block that ptxas folds into `.nv.shared.<kernel>` when the module has a
# `.nv.shared.reserved.*` section: CUDA C++ Programming Guide, "Compute Capabilities" table, note on
# "Maximum amount of shared memory per thread block" (1 KB reserved for system use, CC >= 8.0).
SYSTEM_RESERVED_SHARED_BYTES = 1024

_U32 = struct.Struct("<I")
_U32X2 = struct.Struct("<II")
_U32X3 = struct.Struct("<III")


def cubin_arch(elf: CubinElf) -> str:
    """`sm_XX` from the cubin ELF header."""
    if elf.machine != EM_CUDA:
        raise CodeObjectError(
            elf.label, f"not a cubin: ELF machine is {elf.machine_name}, expected cuda (190)"
        )
    sm = (elf.e_flags >> 8) & 0xFF if elf.osabi == ELFOSABI_CUDA_V2 else elf.e_flags & 0xFF
    if sm == 0:
        raise CodeObjectError(elf.label, f"cubin e_flags {elf.e_flags:#x} carry no SM version")
    return f"sm_{sm}"


def _records(elf: CubinElf, data: memoryview, section: str) -> list[tuple[int, int, memoryview | int]]:
    out: list[tuple[int, int, memoryview | int]] = []
    pos, n = 0, len(data)
    while pos + 4 <= n:
        fmt = data[pos]
        attr = data[pos + 1]
        if fmt == EIFMT_SVAL:
            size = data[pos + 2] | (data[pos + 3] << 8)
            end = pos + 4 + size
            if end > n:
                raise CodeObjectError(elf.label, f"{section}: attribute {attr:#x} overruns the section")
            out.append((fmt, attr, data[pos + 4 : end]))
            pos = end
        elif fmt == EIFMT_HVAL:
            out.append((fmt, attr, data[pos + 2] | (data[pos + 3] << 8)))
            pos += 4
        elif fmt in (EIFMT_BVAL, EIFMT_NVAL):
            out.append((fmt, attr, data[pos + 2]))
            pos += 4
        else:
            raise CodeObjectError(elf.label, f"{section}: unknown attribute format {fmt} at byte {pos}")
    return out


_WANTED = frozenset(
    {
        EIATTR_REGCOUNT,
        EIATTR_MAX_THREADS,
        EIATTR_REQNTID,
        EIATTR_CTA_PER_CLUSTER,
        EIATTR_MAXREG_COUNT,
        EIATTR_NUM_BARRIERS,
        EIATTR_WMMA_USED,
        EIATTR_CBANK_PARAM_SIZE,
    }
)


_GLOBAL_REC = struct.Struct("<BBHII")


def _global_info_fast(data: memoryview, per_sym: dict[int, dict[int, int]]) -> bool:
    """The common `.nv.info` layout (each record `SVAL size 8: symbol, value`) decoded by one C unpacker into
    per_sym (symbol -> attribute -> value); False if any record differs (then the generic parser runs)."""
    if len(data) % _GLOBAL_REC.size:
        return False
    for fmt, attr, size, sym, value in _GLOBAL_REC.iter_unpack(data):
        if fmt != EIFMT_SVAL or size != 8:
            return False
        d = per_sym.get(sym)
        if d is None:
            per_sym[sym] = d = {}
        d[attr] = value
    return True


# One function of a cubin as plain values (cheap to pickle between processes): name, is_entry, registers,
# max_registers, static_shared_bytes, shared_section_bytes, stack_frame_bytes, min_stack_bytes,
# max_threads_per_block, required_block_size, constant_banks, param_bytes, barriers, uses_wmma, cluster_dims.
KernelRow = tuple[
    str,
    bool,
    int | None,
    int | None,
    int,
    int,
    int | None,
    int | None,
    int | None,
    list[int] | None,
    dict[str, int],
    int | None,
    int | None,
    bool | None,
    list[int] | None,
]


def read_cubin(
    buf: bytes | memoryview | CubinElf, label: str, entry: str | None = None
) -> list[KernelResources]:
    """Every function in a cubin with its resources (entry kernels first-class, device functions marked)."""
    elf = buf if isinstance(buf, CubinElf) else CubinElf(buf, label)
    arch, rows = cubin_rows(elf)
    return kernels_from_rows(rows, arch, entry or label)


def kernels_from_rows(
    rows: list[KernelRow], arch: str, entry_label: str, with_id: bool = False
) -> list[KernelResources]:
    """`KernelResources` of the rows `cubin_rows` returned for one cubin (`with_id`: also set kernel_id
    '<entry>::<name>', as the loader does), built in one call per cubin."""
    # every field, in KernelResources' order: the dicts become the models' __dict__ as they are
    fields = [
        {
            "kernel_id": f"{entry_label}::{name}" if with_id else "",
            "name": name,
            "demangled": name,
            "vendor": "nvidia",
            "arch": arch,
            "target_features": (),
            "entry": entry_label,
            "is_entry": is_entry,
            "registers": regs,
            "agprs": None,
            "sgprs": None,
            "max_registers": maxreg,
            "static_shared_bytes": static_shared,
            "shared_section_bytes": sec_shared,
            "dynamic_lds": None,
            "stack_frame_bytes": frame,
            "min_stack_bytes": min_stack,
            "spill_store_bytes": None,
            "spill_load_bytes": None,
            "sgpr_spills": None,
            "vgpr_spills": None,
            "spills_recorded": False,
            "dynamic_stack": None,
            "max_threads_per_block": max_threads,
            "required_block_size": reqntid,
            "constant_banks": banks,
            "param_bytes": param_bytes,
            "barriers": barriers,
            "uses_wmma": wmma,
            "wavefront_size": None,
            "workgroup_processor_mode": None,
            "cluster_dims": cluster,
            "notes": (),
        }
        for (
            name,
            is_entry,
            regs,
            maxreg,
            static_shared,
            sec_shared,
            frame,
            min_stack,
            max_threads,
            reqntid,
            banks,
            param_bytes,
            barriers,
            wmma,
            cluster,
        ) in rows
    ]
    return kernels_from_values(fields)


@dataclass
class _Sections:
    """What `cubin_rows` needs from the section table, gathered in one pass."""

    texts: dict[int, tuple[str, int]] = field(default_factory=dict)  # symbol -> (kernel, .text index)
    info_secs: dict[str, int] = field(default_factory=dict)  # kernel -> `.nv.info.<kernel>` index
    shared: dict[str, int] = field(default_factory=dict)
    consts: dict[str, dict[str, int]] = field(default_factory=dict)
    module_consts: dict[str, int] = field(default_factory=dict)
    has_reserved: bool = False
    global_info: memoryview | None = None


def _scan_sections(elf: CubinElf) -> _Sections:
    raw = elf.raw_sections
    out = _Sections()
    for i, nm in enumerate(elf.section_names):
        if nm[:6] == ".text.":
            # function symbol index (sh_info low 24 bits) -> name
            out.texts[raw[i][7] & 0xFFFFFF] = (nm[6:], i)
        elif nm[:4] != ".nv.":
            continue
        elif nm[4:9] == "info.":
            out.info_secs[nm[9:]] = i
        elif nm == ".nv.info":
            out.global_info = elf.raw_data(i)
        elif nm[4:11] == "shared.":
            rest = nm[11:]
            if rest.startswith("reserved."):
                out.has_reserved = True
            else:
                out.shared[rest] = raw[i][5]
        elif nm[4:12] == "constant":
            bank, dot, fn = nm[12:].partition(".")
            if not bank.isdigit():
                continue
            if dot:
                out.consts.setdefault(fn, {})[bank] = raw[i][5]
            else:
                out.module_consts[bank] = raw[i][5]
    return out


def _global_attrs(elf: CubinElf, global_info: memoryview | None) -> dict[int, dict[int, int]]:
    """Per-symbol attributes of the module-wide `.nv.info` (register count, frame, stack)."""
    per_sym: dict[int, dict[int, int]] = {}
    if global_info is not None and not _global_info_fast(global_info, per_sym):
        per_sym.clear()
        for fmt, attr, val in _records(elf, global_info, ".nv.info"):
            if fmt == EIFMT_SVAL and isinstance(val, memoryview) and len(val) >= 8:
                sym, value = _U32X2.unpack_from(val, 0)
                per_sym.setdefault(sym, {})[attr] = value
    return per_sym


@dataclass
class _KernelInfo:
    """The attributes of one `.nv.info.<kernel>` section that the resource rows use."""

    regs: int | None
    max_threads: int | None = None
    reqntid: list[int] | None = None
    maxreg: int | None = None
    barriers: int | None = None
    wmma: bool = False
    param_bytes: int | None = None
    cluster: list[int] | None = None

    def sval(self, attr: int, data: bytes, pos: int, size: int) -> None:
        if attr == EIATTR_REGCOUNT and size >= 8:
            self.regs = _U32X2.unpack_from(data, pos + 4)[1]
        elif attr == EIATTR_MAX_THREADS and size >= 12:
            x, y, z = _U32X3.unpack_from(data, pos + 4)
            self.max_threads = x * y * z
        elif attr == EIATTR_REQNTID and size >= 12:
            self.reqntid = list(_U32X3.unpack_from(data, pos + 4))
        elif attr == EIATTR_CTA_PER_CLUSTER and size >= 12:
            self.cluster = list(_U32X3.unpack_from(data, pos + 4))
        elif attr == EIATTR_WMMA_USED:
            self.wmma = True

    def small(self, attr: int, val: int) -> None:
        if attr == EIATTR_MAXREG_COUNT:
            self.maxreg = val
        elif attr == EIATTR_NUM_BARRIERS:
            self.barriers = val
        elif attr == EIATTR_WMMA_USED:
            self.wmma = True
        elif attr == EIATTR_CBANK_PARAM_SIZE:
            self.param_bytes = val


def _walk_kernel_info(label: str, name: str, data: bytes, ki: _KernelInfo) -> None:
    """Walk the `.nv.info.<kernel>` records in place, decoding only the attributes used here."""
    pos, n = 0, len(data)
    while pos + 4 <= n:
        fmt = data[pos]
        attr = data[pos + 1]
        if fmt == EIFMT_SVAL:
            end = pos + 4 + (data[pos + 2] | (data[pos + 3] << 8))
            if end > n:
                raise CodeObjectError(label, f".nv.info.{name}: attribute {attr:#x} overruns the section")
            if attr in _WANTED:
                ki.sval(attr, data, pos, end - pos - 4)
            pos = end
        elif fmt in (EIFMT_HVAL, EIFMT_BVAL, EIFMT_NVAL):
            if attr in _WANTED:
                ki.small(attr, data[pos + 2] | (data[pos + 3] << 8) if fmt == EIFMT_HVAL else data[pos + 2])
            pos += 4
        else:
            raise CodeObjectError(label, f".nv.info.{name}: unknown attribute format {fmt} at byte {pos}")


def cubin_rows(elf: CubinElf) -> tuple[str, list[KernelRow]]:
    """The cubin's arch and one plain row per function (what `read_cubin` turns into `KernelResources`)."""
    arch = cubin_arch(elf)
    raw = elf.raw_sections
    secs = _scan_sections(elf)
    per_sym = _global_attrs(elf, secs.global_info)
    reserve = SYSTEM_RESERVED_SHARED_BYTES if secs.has_reserved else 0
    # slice `.nv.info.<kernel>` bytes straight from the image when it is a bytes object (one copy, no view)
    obj = elf.buf.obj
    blob = obj if isinstance(obj, bytes) and len(obj) == elf.buf.nbytes else None
    no_attrs: dict[int, int] = {}
    rows: list[KernelRow] = []
    for sym, (name, sec_index) in secs.texts.items():
        g = per_sym.get(sym, no_attrs)
        info = secs.info_secs.get(name)
        text_info, text_flags = raw[sec_index][7], raw[sec_index][2]
        regs = g.get(EIATTR_REGCOUNT)
        if regs is None and (text_info >> 24):
            regs = text_info >> 24  # older ABI keeps the count in sh_info bits 24..31
        ki = _KernelInfo(regs)
        if info is not None:
            ir = raw[info]
            if blob is not None and ir[1] != SHT_NOBITS:
                data = blob[ir[4] : ir[4] + ir[5]]
            else:
                data = bytes(elf.raw_data(info))
            _walk_kernel_info(elf.label, name, data, ki)
            if ki.barriers is None:
                ki.barriers = (text_flags >> 20) & 0x7F  # older ABI: barrier count in sh_flags bits 20..26
        if ki.reqntid is not None and ki.max_threads is None:
            ki.max_threads = ki.reqntid[0] * ki.reqntid[1] * ki.reqntid[2]
        sec_shared = secs.shared.get(name, 0)
        banks = dict(secs.consts.get(name, {}))
        for bank, size in secs.module_consts.items():
            banks.setdefault(bank, size)
        rows.append(
            (
                name,
                info is not None,
                ki.regs,
                ki.maxreg,
                max(0, sec_shared - reserve),
                sec_shared,
                g.get(EIATTR_FRAME_SIZE),
                g.get(EIATTR_MIN_STACK_SIZE),
                ki.max_threads,
                ki.reqntid,
                banks,
                ki.param_bytes,
                ki.barriers,
                ki.wmma if info is not None else None,
                ki.cluster,
            )
        )
    return arch, rows


def _nv_ptx_arch(text: str) -> str | None:
    for line in text.splitlines()[:80]:
        line = line.strip()
        if line.startswith(".target"):
            return line.split()[1].rstrip(",")
    return None


_PTX_ENTRY = re.compile(r"\.entry\s+([^\s(]+)")


def ptx_entries(text: str) -> list[str]:
    """Names of `.entry` kernels in PTX text."""
    return _PTX_ENTRY.findall(text)
