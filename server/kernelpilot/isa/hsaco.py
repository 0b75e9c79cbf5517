"""AMD HSACO reader (code object v3/v4/v5/v6): per-kernel resources from the AMDGPU metadata note
(MessagePack, NT_AMDGPU_METADATA) and the 64-byte kernel descriptors (`<kernel>.kd` symbols).

Formats: LLVM AMDGPU backend user guide, "Code Object V3-V6 Metadata" and "Kernel Descriptor" sections,
https://llvm.org/docs/AMDGPUUsage.html .
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from kernelpilot.isa.elf import EM_AMDGPU, ElfImage
from kernelpilot.isa.errors import CodeObjectError
from kernelpilot.isa.models import KernelResources

NT_AMDGPU_METADATA = 32  # AMDGPUUsage "Code Object V3+ Note Records"
ELFOSABI_AMDGPU_HSA = 64  # AMDGPUUsage "ELF Header"
# e_ident[EI_ABIVERSION] -> code object version (AMDGPUUsage "ELF Header": ELFABIVERSION_AMDGPU_HSA_V3..V6)
ABI_TO_COV = {1: 3, 2: 4, 3: 5, 4: 6}
# EF_AMDGPU_MACH values (AMDGPUUsage table "AMDGPU EF_AMDGPU_MACH Values"); used when metadata has no target
# (the gfx10/gfx11/gfx12 values checked on code objects clang 19 builds for each -mcpu)
MACH_TO_GFX = {
    0x2F: "gfx908",
    0x3F: "gfx90a",
    0x4C: "gfx942",
    0x4F: "gfx950",
    0x33: "gfx1010",
    0x34: "gfx1011",
    0x35: "gfx1012",
    0x36: "gfx1030",
    0x41: "gfx1100",
    0x46: "gfx1101",
    0x47: "gfx1102",
    0x43: "gfx1150",
    0x4A: "gfx1151",
    0x48: "gfx1200",
    0x4E: "gfx1201",
}
KD_SIZE = 64  # AMDGPUUsage "Kernel Descriptor" layout
_KD = struct.Struct("<IIIIq20sIIIHH4s")
KCP_ENABLE_WAVEFRONT_SIZE32 = 1 << 10  # kernel_code_properties bit 10
KCP_USES_DYNAMIC_STACK = 1 << 11  # kernel_code_properties bit 11
RSRC1_WGP_MODE = 1 << 29  # COMPUTE_PGM_RSRC1 bit 29 WGP_MODE (GFX10-GFX12; reserved before)


def parse_target(target: str) -> tuple[str, list[str]]:
    """'amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-' -> ('gfx90a', ['sramecc+', 'xnack-'])."""
    proc = target.split("--", 1)[1] if "--" in target else target
    parts = proc.split(":")
    return parts[0], parts[1:]


def read_hsaco(
    buf: bytes | memoryview | ElfImage, label: str, entry: str | None = None
) -> list[KernelResources]:
    elf = buf if isinstance(buf, ElfImage) else ElfImage(buf, label)
    if elf.machine != EM_AMDGPU:
        raise CodeObjectError(elf.label, f"not an AMD GPU code object: ELF machine is {elf.machine_name}")
    cov = ABI_TO_COV.get(elf.abiversion) if elf.osabi == ELFOSABI_AMDGPU_HSA else None
    if cov is None:
        raise CodeObjectError(
            elf.label,
            f"unsupported AMDGPU code object (OS/ABI {elf.osabi}, ABI version {elf.abiversion}); "
            "v3-v6 (HSA) are read",
        )
    meta: dict[str, Any] | None = None
    for sec in elf.sections:
        if sec.type != "SHT_NOTE":
            continue
        for note in elf.notes(sec):
            if note.name == "AMDGPU" and note.type == NT_AMDGPU_METADATA:
                decoded = _metadata(note.desc, elf.label)
                if not isinstance(decoded, dict):
                    raise CodeObjectError(elf.label, "AMDGPU metadata note is not a map")
                meta = decoded
    if meta is None:
        raise CodeObjectError(elf.label, "no AMDGPU metadata note (NT_AMDGPU_METADATA) found")
    target = meta.get("amdhsa.target")
    if isinstance(target, str) and target:
        gfx, features = parse_target(target)
    else:
        gfx = MACH_TO_GFX.get(elf.e_flags & 0xFF, f"gfx-mach-{elf.e_flags & 0xFF:#x}")
        features = []
    kds = _kernel_descriptors(elf)
    kernels_meta = meta.get("amdhsa.kernels", [])
    if not isinstance(kernels_meta, list):
        raise CodeObjectError(elf.label, "AMDGPU metadata 'amdhsa.kernels' is not a list")
    out: list[KernelResources] = []
    for k in kernels_meta:
        if not isinstance(k, dict) or not isinstance(k.get(".name"), str):
            raise CodeObjectError(elf.label, "AMDGPU metadata has a kernel entry without a .name")
        name = k[".name"]
        sym = k.get(".symbol", name + ".kd")
        kd = kds.get(sym if isinstance(sym, str) else name + ".kd")
        notes = [f"code object v{cov}"]
        wave = _int(k.get(".wavefront_size"))
        dyn_stack = _bool(k.get(".uses_dynamic_stack"))
        lds = _int(k.get(".group_segment_fixed_size"))
        scratch = _int(k.get(".private_segment_fixed_size"))
        kernarg = _int(k.get(".kernarg_segment_size"))
        wgp = _bool(k.get(".workgroup_processor_mode"))
        if kd is not None:
            g, p, ka, props, rsrc1 = kd
            if wgp is None and _gfx10_plus(gfx):
                wgp = bool(rsrc1 & RSRC1_WGP_MODE)
            if wave is None:
                wave = 32 if props & KCP_ENABLE_WAVEFRONT_SIZE32 else 64
            if dyn_stack is None:
                dyn_stack = bool(props & KCP_USES_DYNAMIC_STACK)
            lds = g if lds is None else lds
            scratch = p if scratch is None else scratch
            kernarg = ka if kernarg is None else kernarg
            if g != lds or p != scratch:
                notes.append(f"kernel descriptor says LDS {g} / scratch {p}, metadata {lds} / {scratch}")
        else:
            notes.append("no kernel descriptor symbol found")
        reqd = k.get(".reqd_workgroup_size")
        reqd_list = [int(x) for x in reqd] if isinstance(reqd, list) and len(reqd) == 3 else None
        sgpr_spill = _int(k.get(".sgpr_spill_count"))
        vgpr_spill = _int(k.get(".vgpr_spill_count"))
        out.append(
            KernelResources(
                name=name,
                demangled=name,
                vendor="amd",
                arch=gfx,
                target_features=features,
                entry=entry or label,
                registers=_int(k.get(".vgpr_count")),
                agprs=_int(k.get(".agpr_count")),
                sgprs=_int(k.get(".sgpr_count")),
                static_shared_bytes=lds,
                dynamic_lds=_bool(k.get(".dynamic_lds_size")) if ".dynamic_lds_size" in k else None,
                stack_frame_bytes=scratch,
                sgpr_spills=sgpr_spill,
                vgpr_spills=vgpr_spill,
                spills_recorded=sgpr_spill is not None or vgpr_spill is not None,
                dynamic_stack=dyn_stack,
                max_threads_per_block=_int(k.get(".max_flat_workgroup_size")),
                required_block_size=reqd_list,
                param_bytes=kernarg,
                wavefront_size=wave,
                workgroup_processor_mode=wgp if _gfx10_plus(gfx) else None,
                notes=notes,
            )
        )
    return out


def _metadata(desc: bytes, label: str) -> Any:
    """The MessagePack document of the metadata note (the note's zero padding after it is allowed)."""
    try:
        return msgpack.unpackb(desc)
    except msgpack.ExtraData as exc:
        if not exc.extra.strip(b"\0"):
            return exc.unpacked
        raise CodeObjectError(label, f"AMDGPU metadata note does not decode: {exc}") from exc
    except (ValueError, TypeError) as exc:  # msgpack's FormatError, StackError, OutOfData are ValueErrors
        raise CodeObjectError(label, f"AMDGPU metadata note does not decode: {exc}") from exc


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def _bool(v: Any) -> bool | None:
    return bool(v) if isinstance(v, bool | int) else None


def _gfx10_plus(gfx: str) -> bool:
    """gfx10 and later spell their version with four digits (gfx1010, gfx1201; gfx90a, gfx942 have three)."""
    return gfx.startswith("gfx") and len(gfx) >= 7 and gfx[3:5].isdigit() and int(gfx[3:5]) >= 10


def _kernel_descriptors(elf: ElfImage) -> dict[str, tuple[int, int, int, int, int]]:
    out: dict[str, tuple[int, int, int, int, int]] = {}
    for sym in elf.symbols():
        if (
            not sym.name.endswith(".kd")
            or not isinstance(sym.shndx, int)
            or not 0 < sym.shndx < len(elf.sections)
        ):
            continue
        sec = elf.sections[sym.shndx]
        off = sec.offset + (sym.value - sec.addr)
        if sym.size < KD_SIZE or off < sec.offset or off + KD_SIZE > sec.offset + sec.size:
            raise CodeObjectError(elf.label, f"kernel descriptor {sym.name} lies outside its section")
        g, p, ka, _r, _entry, _r2, _rs3, rsrc1, _rs2, props, _pre, _r3 = _KD.unpack_from(elf.buf, off)
        out[sym.name] = (g, p, ka, props, rsrc1)
    return out
