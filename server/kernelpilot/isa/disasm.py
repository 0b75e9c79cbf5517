"""Disassembly through the toolchain (nvdisasm for SASS, llvm-objdump for AMDGCN) and instruction-mix
families per kernel. Parsing is of the tools' plain text output; nothing here needs a GPU."""

from __future__ import annotations

import functools
import os
import re
import struct
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kernelpilot.foundation.errors import ToolFailedError, ToolNotFoundError
from kernelpilot.host import toolchain
from kernelpilot.isa.elf import EM_AMDGPU
from kernelpilot.isa.errors import DisassemblerTargetError

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

# SASS opcode -> issue-floor pipe class (kernelpilot.roofline.issue). Only opcodes whose pipe and rate
# NVIDIA's throughput table states are classed; everything else counts toward the issue total alone.
# A class's rate is the fastest cited rate among its members, so a per-pipe floor stays a lower bound.
SASS_PIPES: dict[str, frozenset[str]] = {
    "fma": frozenset({"FFMA", "FADD", "FMUL", "IMAD", "IMUL", "HFMA2", "HADD2", "HMUL2"}),
    "alu": frozenset(
        {
            "IADD3",
            "IADD",
            "LOP3",
            "LOP",
            "ISETP",
            "FSETP",
            "SEL",
            "FSEL",
            "SHF",
            "SHL",
            "SHR",
            "IMNMX",
            "FMNMX",
            # Byte permute, predicate logic and the half2 compare: ncu's ALU pipe counter on the H100
            # (tests/fixtures/roofline/issue_bound/row_sort_raw.csv) counts 614 ALU warp instructions per
            # warp of row_sort_kernel, whose SASS has 330 of the opcodes above plus PRMT 154, HSETP2 89 and
            # PLOP3 35 (= 608): they issue to the ALU pipe too.
            "PRMT",
            "PLOP3",
            "HSETP2",
        }
    ),
    "shuffle": frozenset({"SHFL"}),
    "xu": frozenset({"MUFU", "F2I", "I2F", "F2F", "FRND"}),
}
_PIPE_OF = {op: pipe for pipe, ops in SASS_PIPES.items() for op in ops}

# AMDGCN opcode -> issue-floor class (kernelpilot.roofline.issue), by the instruction categories the CU
# scheduler issues from (ROCm Compute Profiler, "Pipeline descriptions" > "Scheduler": one instruction per
# cycle of each of VALU, VMEM, SALU/SMEM, LDS and branch). Transcendental VALU ops (quarter rate in LLVM's
# AMDGPU scheduling model, SISchedule.td WriteTrans32) are also counted in their own class; matrix ops
# (MFMA/WMMA) run on their own unit and count toward the issue total alone. Cross-lane moves: DPP is a VALU
# operand modifier (counted as VALU), ds_permute/ds_bpermute/ds_swizzle use the LDS path (counted as LDS).
AMD_PIPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("matrix", re.compile(r"^v_(mfma|smfmac|wmma|swmmac)")),
    ("valu", re.compile(r"^v_")),
    ("lds", re.compile(r"^ds_")),
    ("vmem", re.compile(r"^(global|buffer|flat|scratch|image|tbuffer)_")),
    ("branch", re.compile(r"^s_(branch|cbranch|setpc|swappc|endpgm)")),
    ("salu", re.compile(r"^s_")),
)
AMD_TRANS = re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)_(f16|f32|legacy_f32|iflag_f32)")
# Scheduler-internal instructions: not issued to a functional unit (ROCm Compute Profiler, "Pipeline
# descriptions" > "Scheduler", note on "internal" instructions: s_nop, s_sleep, s_waitcnt, s_barrier,
# s_setprio, ...; gfx11/12 add s_delay_alu, s_clause and the split s_wait_* counters). They pad no issue slot,
# so the issue-floor counts leave them out, as they leave out NOP on NVIDIA.
AMD_INTERNAL = re.compile(
    r"^s_(nop|sleep|waitcnt|wait_|barrier|setprio|setvskip|halt|delay_alu|clause|code_end|inst_prefetch)"
)
_AMD_ADDR = re.compile(r"//\s*([0-9A-Fa-f]+):")
_AMD_TARGET = re.compile(r"<([^>+]+)\+0x([0-9a-f]+)>")
_SASS_LABEL = re.compile(r"^(\.L_x_\d+):\s*$")
_SASS_BRA_TARGET = re.compile(r"\bBRA(?:\.[A-Z0-9_.]+)?\s+(?:!?U?P[T0-9]+,\s*)?`\((\.L_x_\d+)\)")

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
    pipes: Counter[str] = field(default_factory=Counter)
    issued: int = 0  # instructions a warp can issue: NOP padding and the closing self-loop BRA left out
    backward_branches: int = 0  # branches to a label above them (loops), the closing self-loop left out
    forward_branches: int = 0  # predicated branches down: code a warp may skip, counted all the same
    labels: dict[str, int] = field(default_factory=dict)  # label -> issued count where it stands


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
        lm = _SASS_LABEL.match(line.strip())
        if lm:
            cur.labels[lm.group(1)] = cur.issued
            continue
        m = _SASS_LINE.search(line)
        if not m:
            continue
        op = m.group(1)
        _count(cur, op, "nvidia")
        _count_issue(cur, op, line)
        if keep_text:
            cur.text.append(line.strip())
    return out


def _count_issue(cur: KernelMix, op: str, line: str) -> None:
    """Issue-floor counts of one SASS line: pipe class, issued instructions, loops (backward branches)."""
    base = op.split(".")[0]
    if base == "NOP":
        return
    target = _SASS_BRA_TARGET.search(line)
    if target is not None and target.group(1) in cur.labels:
        if cur.labels[target.group(1)] == cur.issued:
            return  # `.L_x_N: BRA .L_x_N`: the closing self-loop after EXIT, never issued by a live warp
        cur.backward_branches += 1
    elif target is not None and "@" in line.split("BRA", 1)[0]:
        cur.forward_branches += 1
    cur.issued += 1
    pipe = _PIPE_OF.get(base)
    if pipe is not None:
        cur.pipes[pipe] += 1


def parse_amdgcn(text: str, keep_text: bool = False) -> dict[str, KernelMix]:
    out: dict[str, KernelMix] = {}
    cur: KernelMix | None = None
    start = 0
    for line in text.splitlines():
        fm = _AMD_FUNC.match(line)
        if fm:
            cur = out.setdefault(fm.group(1), KernelMix(fm.group(1)))
            start = int(line.split()[0], 16)
            continue
        if cur is None:
            continue
        m = _AMD_LINE.match(line)
        if not m:
            continue
        _count(cur, m.group(1), "amd")
        _count_amd_issue(cur, m.group(1), line, start)
        if keep_text:
            cur.text.append(line.strip())
    return out


def amd_pipe_of(op: str) -> str | None:
    """The issue-floor class of one AMDGCN opcode (`AMD_PIPES`), None for a scheduler-internal one."""
    if AMD_INTERNAL.match(op):
        return None
    for pipe, pat in AMD_PIPES:
        if pat.match(op):
            return pipe
    return "other"


def _count_amd_issue(cur: KernelMix, op: str, line: str, start: int) -> None:
    """Issue-floor counts of one AMDGCN line: class, issued instructions, loops (branches to an address at or
    above the function start and below this one) and conditional forward branches (code a wave may skip)."""
    pipe = amd_pipe_of(op)
    if pipe is None:
        return
    cur.issued += 1
    if pipe != "other":
        cur.pipes[pipe] += 1
    if pipe == "valu" and AMD_TRANS.match(op):
        cur.pipes["trans"] += 1
    if pipe != "branch":
        return
    addr, target = _AMD_ADDR.search(line), _AMD_TARGET.search(line)
    if addr is None or target is None:
        return
    dest = start + int(target.group(2), 16)
    if dest <= int(addr.group(1), 16):
        cur.backward_branches += 1
    elif op.startswith("s_cbranch"):
        cur.forward_branches += 1


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


# AMD processors an LLVM release is known to handle: Debian clang 19.1 built kernelpilot's own code objects
# for them (tests/fixtures/isa/PROVENANCE.md, `k.<gfx>.hsaco`). Named in the error when an older LLVM lacks
# one.
KNOWN_GOOD_LLVM = {gfx: 19 for gfx in ("gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201")}
_UNKNOWN_CPU = "is not a recognized processor"


@dataclass(frozen=True)
class TargetSupport:
    """Whether one llvm-objdump can disassemble one AMD processor, and if not, why (a sentence)."""

    arch: str
    tool: str
    version: str | None
    ok: bool
    reason: str


def _header_only_amdgpu_elf() -> bytes:
    """An ELF64 relocatable AMDGPU object with no sections: enough for llvm-objdump to build the
    disassembler for `--mcpu` (and abort when it does not know it) without reading any code."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 64, 3]) + bytes(7)  # ELF64, LE, v1, OS/ABI HSA, ABI v3 (cov5)
    return ident + struct.pack("<HHIQQQIHHHHHH", 1, EM_AMDGPU, 1, 0, 0, 0, 0, 64, 0, 0, 64, 0, 0)


def llvm_major(version_line: str | None) -> int | None:
    m = re.search(r"LLVM version (\d+)", version_line or "")
    return int(m.group(1)) if m else None


def amd_target_support(arch: str) -> TargetSupport:
    """Probe (once per tool file and processor) whether the llvm-objdump found can disassemble `arch`."""
    exe = Path(llvm_objdump())
    try:
        stamp = exe.stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _probe(str(exe), stamp, arch)


@functools.cache
def _probe(exe: str, stamp: int, arch: str) -> TargetSupport:
    version = toolchain.tool_version("llvm-objdump", Path(exe))
    with tempfile.TemporaryDirectory(prefix="kp-probe-") as tmp:
        obj = os.path.join(tmp, "probe.o")
        with open(obj, "wb") as fh:
            fh.write(_header_only_amdgpu_elf())
        res = toolchain.run(
            [exe, "-d", "--triple=amdgcn-amd-amdhsa", f"--mcpu={arch}", obj], timeout_s=60, check=False
        )
    if res.returncode == 0 and _UNKNOWN_CPU not in res.stderr:
        return TargetSupport(arch, exe, version, True, "")
    found = f"LLVM {version.split('version', 1)[-1].strip()}" if version and "version" in version else exe
    known = KNOWN_GOOD_LLVM.get(arch)
    need = (
        f"an LLVM that knows {arch} (LLVM {known} does: it built kernelpilot's {arch} test objects)"
        if known
        else f"an LLVM that knows {arch} (a newer release than this one)"
    )
    reason = (
        f"llvm-objdump {exe} ({found}) cannot disassemble {arch}: its AMDGPU backend does not know that "
        f"processor; needs {need}"
    )
    return TargetSupport(arch, exe, version, False, reason)


def require_amd_disassembler(arch: str) -> str:
    """The llvm-objdump path when it can disassemble `arch`; else `DisassemblerTargetError` naming the
    version found, the one needed and how to get it."""
    support = amd_target_support(arch)
    if support.ok:
        return support.tool
    want = KNOWN_GOOD_LLVM.get(arch, 19)
    raise DisassemblerTargetError(
        support.reason,
        f"install LLVM {want} or newer (apt.llvm.org or your distribution's llvm-{want} package, or ROCm's "
        f"/opt/rocm/llvm) and set KERNELPILOT_LLVM_OBJDUMP to its llvm-objdump, e.g. "
        f"/usr/lib/llvm-{want}/bin/llvm-objdump; resources and occupancy need no disassembler",
    )


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
        exe_s = require_amd_disassembler(arch)
        try:
            return toolchain.run(
                [exe_s, "-d", "--triple=amdgcn-amd-amdhsa", f"--mcpu={arch}", path], timeout_s=timeout_s
            ).stdout
        except ToolFailedError as exc:
            if "LLVM ERROR" not in exc.stderr_tail:
                raise
            # LLVM aborted: keep its one-line reason, not the crash dump that follows it
            line = next(ln for ln in exc.stderr_tail.splitlines() if "LLVM ERROR" in ln)
            raise DisassemblerTargetError(
                f"llvm-objdump {exe_s} aborted disassembling {arch}: {line.strip()}",
                "try a newer LLVM (set KERNELPILOT_LLVM_OBJDUMP to its llvm-objdump)",
            ) from None


def _cuobjdump_to_nvdisasm(text: str) -> str:
    """Rewrite cuobjdump's `Function : name` headers as nvdisasm-style `.text.name:` labels."""
    return re.sub(r"^\s*Function : (\S+)\s*$", r".text.\1:", text, flags=re.M)
