"""Disassembly through the toolchain (nvdisasm for SASS, llvm-objdump for AMDGCN) and instruction-mix
families per kernel. Parsing is of the tools' plain text output; nothing here needs a GPU."""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field

from kernelpilot import toolchain
from kernelpilot.errors import ToolNotFoundError

# SASS opcode (first dotted token) -> family
_SASS_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "matrix",
        re.compile(r"^(HMMA|IMMA|DMMA|BMMA|HGMMA|IGMMA|QGMMA|BGMMA|QMMA|OMMA|UTC\w*MMA\w*|UTCQMMA|UTCHMMA)$"),
    ),
    ("global_load", re.compile(r"^(LDG|LD)$")),
    ("global_store", re.compile(r"^(STG|ST)$")),
    ("async_copy", re.compile(r"^(LDGSTS|LDGDEPBAR|UTMALDG|UTMASTG|UTMAPF|UBLKCP|UTMACCTL|UBLKRED)$")),
    ("shared", re.compile(r"^(LDS|STS|LDSM|STSM|ATOMS|LDTM|STTM)$")),
    ("local", re.compile(r"^(LDL|STL)$")),
    ("barrier", re.compile(r"^(BAR|BARRIER|SYNCS|WARPSYNC|MEMBAR|DEPBAR|ERRBAR|CCTL|FENCE)$")),
    ("special_function", re.compile(r"^MUFU$")),
    ("branch", re.compile(r"^(BRA|BRX|JMP|JMX|CALL|RET|EXIT|BSSY|BSYNC|BREAK|BPT|WARPSYNC)$")),
    ("atomic", re.compile(r"^(ATOM|ATOMG|RED|REDG|REDUX)$")),
    ("constant_load", re.compile(r"^(LDC|ULDC)$")),
)

_AMD_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("matrix", re.compile(r"^v_(mfma|smfmac|wmma|swmmac)")),
    ("global_load", re.compile(r"^(global|buffer|flat)_load")),
    ("global_store", re.compile(r"^(global|buffer|flat)_store")),
    ("atomic", re.compile(r"^(global|buffer|flat)_atomic")),
    ("shared", re.compile(r"^ds_")),
    ("local", re.compile(r"^scratch_")),
    ("barrier", re.compile(r"^s_barrier")),
    ("wait", re.compile(r"^s_wait")),
    ("special_function", re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)_")),
    ("branch", re.compile(r"^s_(branch|cbranch|setpc|swappc|endpgm)")),
    ("scalar_memory", re.compile(r"^s_(load|buffer_load|store|dcache)")),
)

_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_SASS_FUNC = re.compile(r"^\s*\.text\.(\S+?):\s*$")
_AMD_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:\s*$")
_AMD_LINE = re.compile(r"^\s+([a-z][a-z0-9_]*)\b")


@dataclass
class KernelMix:
    name: str
    instructions: int = 0
    families: Counter[str] = field(default_factory=Counter)
    opcodes: Counter[str] = field(default_factory=Counter)
    global_load_bits: Counter[int] = field(default_factory=Counter)
    global_store_bits: Counter[int] = field(default_factory=Counter)
    shared_bits: Counter[int] = field(default_factory=Counter)
    text: list[str] = field(default_factory=list)


def sass_width(op: str) -> int:
    mods = op.split(".")[1:]
    for m in mods:
        if m in ("64", "128", "256"):
            return int(m)
        if m in ("U8", "S8"):
            return 8
        if m in ("U16", "S16"):
            return 16
    return 32


def amd_width(op: str) -> int:
    m = re.search(r"_(dwordx(\d)|dword|b(\d+)|ubyte|sbyte|ushort|sshort|u8|i8|u16|i16|short|byte)(_|$)", op)
    if not m:
        return 32
    t = m.group(1)
    if t.startswith("dwordx"):
        return 32 * int(m.group(2))
    if t == "dword":
        return 32
    if t.startswith("b") and m.group(3):
        return int(m.group(3))
    return 8 if "byte" in t or t in ("u8", "i8") else 16


def family_of(op: str, vendor: str) -> str:
    if vendor == "nvidia":
        base = op.split(".")[0]
        for fam, pat in _SASS_FAMILIES:
            if pat.match(base):
                return fam
        return "other"
    for fam, pat in _AMD_FAMILIES:
        if pat.match(op):
            return fam
    return "other"


def parse_sass(text: str, keep_text: bool = False) -> dict[str, KernelMix]:
    out: dict[str, KernelMix] = {}
    cur: KernelMix | None = None
    for line in text.splitlines():
        fm = _SASS_FUNC.match(line)
        if fm:
            cur = out.setdefault(fm.group(1), KernelMix(fm.group(1)))
            continue
        if cur is None:
            continue
        m = _SASS_LINE.search(line)
        if not m:
            continue
        op = m.group(1)
        _count(cur, op, "nvidia")
        if keep_text:
            cur.text.append(line.strip())
    return out


def parse_amdgcn(text: str, keep_text: bool = False) -> dict[str, KernelMix]:
    out: dict[str, KernelMix] = {}
    cur: KernelMix | None = None
    for line in text.splitlines():
        fm = _AMD_FUNC.match(line)
        if fm:
            cur = out.setdefault(fm.group(1), KernelMix(fm.group(1)))
            continue
        if cur is None:
            continue
        m = _AMD_LINE.match(line)
        if not m:
            continue
        _count(cur, m.group(1), "amd")
        if keep_text:
            cur.text.append(line.strip())
    return out


def _count(cur: KernelMix, op: str, vendor: str) -> None:
    fam = family_of(op, vendor)
    cur.instructions += 1
    cur.families[fam] += 1
    key = op.split(".")[0] if vendor == "nvidia" else op
    cur.opcodes[key] += 1
    if fam == "global_load":
        cur.global_load_bits[sass_width(op) if vendor == "nvidia" else amd_width(op)] += 1
    elif fam == "global_store":
        cur.global_store_bits[sass_width(op) if vendor == "nvidia" else amd_width(op)] += 1
    elif fam == "shared":
        cur.shared_bits[sass_width(op) if vendor == "nvidia" else amd_width(op)] += 1


def llvm_objdump() -> str:
    """The llvm-objdump to use (toolchain prefers ROCm's or the newest versioned LLVM, e.g. 19 for gfx12)."""
    return str(toolchain.require_tool("llvm-objdump"))


def disassemble(payload: bytes | memoryview, vendor: str, arch: str, timeout_s: float = 300.0) -> str:
    """Disassembly text of one code object (written to a temp file for the tool)."""
    with tempfile.TemporaryDirectory(prefix="kp-dis-") as tmp:
        path = os.path.join(tmp, "obj.cubin" if vendor == "nvidia" else "obj.hsaco")
        with open(path, "wb") as fh:
            fh.write(bytes(payload))
        if vendor == "nvidia":
            exe = toolchain.find_tool("nvdisasm")
            if exe is not None:
                return toolchain.run([str(exe), "-c", path], timeout_s=timeout_s).stdout
            cu = toolchain.find_tool("cuobjdump")
            if cu is None:
                raise ToolNotFoundError(
                    "disassembly needs nvdisasm or cuobjdump, neither was found",
                    "pip install nvidia-cuda-nvdisasm (or set KERNELPILOT_NVDISASM)",
                )
            return _cuobjdump_to_nvdisasm(toolchain.run([str(cu), "-sass", path], timeout_s=timeout_s).stdout)
        exe_s = llvm_objdump()
        return toolchain.run(
            [exe_s, "-d", "--triple=amdgcn-amd-amdhsa", f"--mcpu={arch}", path], timeout_s=timeout_s
        ).stdout


def _cuobjdump_to_nvdisasm(text: str) -> str:
    """Rewrite cuobjdump's `Function : name` headers as nvdisasm-style `.text.name:` labels."""
    return re.sub(r"^\s*Function : (\S+)\s*$", r".text.\1:", text, flags=re.M)
