"""Join the kernel names of a trace to the code objects the process loaded, for their ISA facts.

Why: a trace names a kernel (`void at::native::(anonymous namespace)::foo<float>(float*, int)`); its
registers, shared memory, spills and occupancy limiter live in a cubin/HSACO inside a library the process
mapped (libtorch_cuda, cuBLASLt, cuDNN, the Triton cache, the user's own `.so`). The two spell the name
differently (see `workload.names`), so the join goes by keys, strictest first, and says which key matched;
a name nothing matches is kept with the reason.

How it stays fast on libraries with ~10^5 kernels: the code objects are read for one architecture
(`isa.loader.load`), but nothing is demangled up front. A trace name is first looked up as a symbol as
it is (extern "C", Triton, cuBLAS names); otherwise its own identifier `foo` is searched, as the
length-prefixed `3foo` an Itanium symbol must contain, in one text of all symbol names; only those
candidates are demangled and compared.

This module does not read traces or run programs (`workload.capture` does) and does not profile
(`workload.drill`).
"""

from __future__ import annotations

import bisect
import difflib
import math
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from kernelpilot.foundation.errors import InputFileError, KernelpilotError
from kernelpilot.foundation.validation import require_file
from kernelpilot.isa.models import KernelResources
from kernelpilot.workload.names import NameKeys, demangle_many, full_key, name_keys

# how -> what it means; `JoinedKernel.how` holds one of the keys
HOW = {
    "exact symbol": "the trace name is the code object's symbol",
    "same normalized name": "demangled names equal after `workload.names.normalize`",
    "same name without parameters": "equal once the parameter lists are dropped (rocprofv3 prints none)",
    "cut name, only prefix match": "the trace cut the name; one symbol starts with what is left",
    "same qualified name, only candidate": "template arguments differ in spelling; one symbol has that name",
    "closest of several": "several instantiations share the name; the closest spelling (similarity >= 0.97)",
}
CLOSEST_MIN = 0.97  # difflib ratio a "closest of several" match needs, and it must beat the runner-up
GPU_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin", b".hip_fatbin")


class JoinedKernel(BaseModel):
    """One trace kernel name and the ISA facts of the code-object kernel it joined to (None = unknown)."""

    name: str = Field(description="the kernel name as the trace spelled it")
    matched: bool
    how: str = Field("", description="which key matched (see workload.join.HOW); empty when unmatched")
    code_object: str | None = Field(None, description="'<file>:<entry label>' the kernel was read from")
    origin: str | None = Field(
        None,
        description="how the process had that file: 'mapped library', 'cupti module' (a cubin the driver "
        "loaded at run time, workload.loaded_cubins) or 'code object file' (Triton cache, given files)",
    )
    symbol: str | None = Field(None, description="the symbol in the code object (mangled for C++)")
    arch: str | None = None
    registers: int | None = Field(None, description="registers per thread (AMD: arch VGPRs)")
    spills_bytes: int | None = Field(None, description="spill stores+loads when recorded (see note)")
    shared_bytes: int | None = Field(None, description="static shared memory / LDS per block")
    dynamic_shared_bytes: int | None = Field(
        None,
        description="code-object facts: dynamic shared memory per block, the launch record's shared memory "
        "less the code's static amount (counted in the occupancy)",
    )
    occupancy: str | None = Field(None, description="theoretical occupancy from the allocation rules")
    limiter: str | None = Field(None, description="resource that limits the occupancy")
    facts: Literal["code object", "trace"] | None = Field(
        None,
        description="where registers/shared/occupancy come from: the joined code object, or (no code object "
        "holds the kernel) the trace's launch record",
    )
    note: str = Field("", description="unmatched: why; matched: ambiguity and caveats")


class LaunchFacts(BaseModel):
    """What a trace records about a kernel's launches: CUPTI's kernel record (Kineto's event args) or a
    rocprofv3 dispatch row. The fallback for kernels no file holds (compiled at run time)."""

    registers: int | None = Field(None, description="registers per thread (AMD: arch VGPRs)")
    shared_bytes: int | None = Field(None, description="shared memory / LDS per block, static + dynamic")
    block: int | None = Field(None, description="threads per block")


def launch_facts_from_kineto(args: dict[str, Any]) -> LaunchFacts:
    """`LaunchFacts` from a Kineto kernel event's `args` ("registers per thread", "shared memory",
    "block")."""

    def num(key: str) -> int | None:
        v = args.get(key)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    blk = args.get("block")
    block = None
    if isinstance(blk, list) and blk and all(isinstance(b, int) for b in blk):
        block = math.prod(blk)
    return LaunchFacts(registers=num("registers per thread"), shared_bytes=num("shared memory"), block=block)


# Kernels no cubin holds, so the join does not read every mapped library looking for them, and says why.
RUNTIME_COMPILED = {
    "cudnn_generated_": "cuDNN compiles its runtime-fusion kernels (cudnn_generated_*) at run time",
    # on the H100 box: none of libcublasLt.so.13's 42,200 fatbin kernels (every arch) is an nvjet kernel;
    # the library names them from a format string `nvjet_sm90_%s_%dx%d_...` and carries a 110 MB
    # `.cask_resource` section besides its fatbin (tests/fixtures/workload/join/gpu2/nvjet_probe.*)
    "nvjet_": "cuBLASLt keeps its nvjet GEMM kernels outside its fatbin (not in any cubin it carries)",
}


def loaded_code_objects(
    pid: int | None = None,
    extra: Sequence[Path] = (),
    triton_cache: Path | None = None,
    maps_text: str | None = None,
) -> list[Path]:
    """The files whose GPU code a process can run: its mapped shared libraries that carry a fatbin or
    offload bundle (`/proc/<pid or self>/maps`, or `maps_text` saved from it), the Triton cache's
    cubins/HSACOs, and `extra` files."""
    text = maps_text if maps_text is not None else _read_maps(pid)
    seen: dict[str, None] = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in Path(parts[5]).name:
            seen.setdefault(parts[5], None)
    out = [Path(p) for p in seen if _has_gpu_code(Path(p))]
    out += triton_objects(triton_cache)
    for p in extra:
        out.append(require_file(p, "code object", "give the path of a .so, cubin, fatbin or HSACO"))
    return list(dict.fromkeys(out))


def _read_maps(pid: int | None) -> str:
    maps = Path(f"/proc/{pid if pid is not None else 'self'}/maps")
    try:
        return maps.read_text()
    except OSError as exc:
        raise InputFileError(
            f"{maps}: cannot read the process's memory map ({exc.strerror})",
            "give a running process id you may inspect (Linux only), or the saved maps text",
        ) from exc


def triton_objects(cache: Path | None = None) -> list[Path]:
    """Cubins and HSACOs in the Triton cache ($TRITON_CACHE_DIR, else ~/.triton/cache)."""
    root = cache or Path(os.environ.get("TRITON_CACHE_DIR") or Path.home() / ".triton" / "cache")
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("*/*") if p.suffix in (".cubin", ".hsaco") and p.is_file())


def _has_gpu_code(path: Path) -> bool:
    """Whether an ELF shared library has a section holding device code (section names only are read)."""
    from kernelpilot.isa.cubin_elf import CubinElf
    from kernelpilot.isa.errors import CodeObjectError

    try:
        with path.open("rb") as fh:
            import mmap

            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return False  # unreadable or empty mapping (deleted file, /dev/...): nothing to join against
    try:
        # the section table alone, through the bounds-checked reader cubins use (a mapped torch process
        # has ~150 libraries; pyelftools took ~5 ms each)
        names = set(CubinElf(memoryview(mm), str(path)).section_names)
        return any(n.decode() in names for n in GPU_SECTIONS)
    except CodeObjectError:
        return False  # not an ELF we can read: it carries no code object we could join to


@dataclass
class _Sym:
    kernel: KernelResources
    where: str
    full: str | None = None  # `names.full_key`, filled by SymbolIndex.keys_of


@dataclass
class SymbolIndex:
    """Every kernel symbol of some code objects, by exact name and searchable by own identifier."""

    syms: list[_Sym] = field(default_factory=list)
    exact: dict[str, list[int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    load_s: float = 0.0
    load_s_by_object: dict[str, float] = field(default_factory=dict)
    searched: int = 0  # code objects read before the join stopped
    arch: str | None = None
    _blob: str = ""
    _starts: list[int] = field(default_factory=list)

    @classmethod
    def build(cls, objects: Iterable[Path], arch: str | None) -> SymbolIndex:
        """An index of every kernel of `objects` for `arch`."""
        idx = cls()
        for path in objects:
            idx.add(Path(path), arch)
        return idx

    def add(self, path: Path, arch: str | None) -> None:
        """Read one more code object into the index (one that cannot be read becomes a warning)."""
        from kernelpilot.isa.loader import load

        t0 = time.perf_counter()
        self.arch = arch
        try:
            loaded = load(path, arch=_arch_family(arch), demangle=False)
        except KernelpilotError as exc:
            self.warnings.append(f"{path}: not read ({exc.message})")
            return
        self.add_kernels(loaded.kernels, str(path))
        dt = time.perf_counter() - t0
        self.load_s_by_object[str(path)] = dt
        self.load_s += dt

    def add_kernels(self, kernels: Iterable[KernelResources], where: str) -> None:
        """Index kernels read elsewhere (entries only; `where` names their file)."""
        pos = self._starts[-1] + len(self.syms[-1].kernel.name) + 1 if self.syms else 0
        names = []
        for k in kernels:
            if k.is_entry:
                self.exact.setdefault(k.name, []).append(len(self.syms))
                self.syms.append(_Sym(k, f"{where}:{k.entry}"))
                self._starts.append(pos)
                pos += len(k.name) + 1
                names.append(k.name)
        if names:
            self._blob = "\n".join([self._blob, *names]) if self._blob else "\n".join(names)

    def candidates(self, own: str) -> list[int]:
        """Symbols that may be a kernel named `own`: that name, or an Itanium symbol holding `<len>own`."""
        if not own:
            return []
        out = list(self.exact.get(own, []))
        seen = set(out)
        needle = f"{len(own.encode())}{own}"
        start = self._blob.find(needle)
        while start >= 0:
            i = bisect.bisect_right(self._starts, start) - 1
            if i not in seen:
                seen.add(i)
                out.append(i)
            nxt = self._starts[i + 1] if i + 1 < len(self._starts) else len(self._blob)
            start = self._blob.find(needle, max(nxt, start + 1))
        return out

    def keys_of(self, ids: list[int]) -> None:
        """Fill the full keys of these symbols (one demangler call for all that lack them)."""
        todo = [i for i in ids if self.syms[i].full is None]
        dem = demangle_many([self.syms[i].kernel.name for i in todo])
        for i in todo:
            name = self.syms[i].kernel.name
            self.syms[i].full = full_key(name, dem.get(name))


def _arch_family(arch: str | None) -> str | None:
    """`sm_90` -> `sm_90,sm_90a,sm_90f`: an H100 runs all three; AMD targets as given."""
    if not arch:
        return None
    a = arch.strip().lower()
    m = re.fullmatch(r"(?:sm_|compute_)(\d+)[af]?", a)
    return f"sm_{m.group(1)},sm_{m.group(1)}a,sm_{m.group(1)}f" if m else a


def join_names(
    names: list[str],
    objects: list[Path],
    arch: str | None = None,
    block_sizes: dict[str, int] | None = None,
    launch_facts: dict[str, LaunchFacts] | None = None,
) -> list[JoinedKernel]:
    """One `JoinedKernel` per name, in order: matched with its ISA facts, or unmatched with the reason (and,
    given `launch_facts` for it, the registers, shared memory and occupancy its trace recorded).

    Code-object files (the user's, the Triton cache, the cubins `workload.loaded_cubins` captured) are all
    read; libraries are read one at a time, most likely first (`search_order`), and reading stops once
    every name has a strict match (its symbol, or the same normalized name): a step's kernels usually live
    in two or three of the ~20 GPU libraries a PyTorch process maps. Kernels compiled at run time
    (`RUNTIME_COMPILED`) are not waited for in libraries, but a captured cubin that holds one is read."""
    index = SymbolIndex()
    blocks = dict(block_sizes or {})
    facts = launch_facts or {}
    for n, f in facts.items():
        if f.block is not None:
            blocks.setdefault(n, f.block)
    todo = [n for n in dict.fromkeys(names) if _runtime_compiled(n) is None]
    for path in search_order(objects):
        index.add(path, arch)
        if _is_library(path) and all(r.how in STRICT for r in join_with_index(todo, index, {}, objects)):
            break
    index.searched = len(index.load_s_by_object)
    out = join_with_index(names, index, blocks, objects)
    syms = {(s.where, s.kernel.name): s.kernel for s in index.syms}
    return [
        _with_dynamic_shared(r, syms, facts.get(r.name), blocks.get(r.name))
        if r.matched
        else _from_trace(r, facts.get(r.name), arch, blocks.get(r.name))
        for r in out
    ]


def _with_dynamic_shared(
    r: JoinedKernel,
    syms: dict[tuple[str, str], KernelResources],
    f: LaunchFacts | None,
    block: int | None,
) -> JoinedKernel:
    """A matched kernel whose launch record shows more shared memory than the code declares: the rest is
    dynamic (cuBLASLt's nvjet GEMMs take ~160 KB that way), so the occupancy is recomputed with it."""
    k = syms.get((r.code_object or "", r.symbol or ""))
    if k is None or f is None or f.shared_bytes is None:
        return r
    dyn = f.shared_bytes - (k.static_shared_bytes or 0)
    if dyn <= 0:
        return r
    occ, lim, why = _occupancy(k, block, dyn)
    note = "; ".join(
        filter(None, [r.note, f"{dyn} B dynamic shared memory per block from the launch record", why])
    )
    return r.model_copy(update={"occupancy": occ, "limiter": lim, "dynamic_shared_bytes": dyn, "note": note})


def _runtime_compiled(name: str) -> str | None:
    return next((why for prefix, why in RUNTIME_COMPILED.items() if name.startswith(prefix)), None)


def _from_trace(r: JoinedKernel, f: LaunchFacts | None, arch: str | None, block: int | None) -> JoinedKernel:
    """An unmatched kernel: the reason, and the facts its trace recorded where there are some.

    The occupancy needs the architecture's allocation rules; a capture that did not record the
    architecture gets none (guessing one would state an H100's occupancy for any GPU) and a note saying
    why (tests/workload/test_join.py, test_unknown_arch_gives_no_occupancy_and_says_why)."""
    why = _runtime_compiled(r.name)
    note = f"{why}: no code object to read" if why else r.note
    if f is None or (f.registers is None and f.shared_bytes is None):
        return r.model_copy(update={"note": note})
    occ, lim = None, None
    if arch:
        k = KernelResources(
            name=r.name,
            demangled=r.name,
            vendor="amd" if arch.strip().lower().startswith("gfx") else "nvidia",
            arch=arch,
            entry="trace",
            registers=f.registers,
            static_shared_bytes=f.shared_bytes,
        )
        occ, lim, why = _occupancy(k, block)
        if why:
            note += f"; {why}"
    else:
        note += f"; {NO_ARCH_OCCUPANCY}"
    return r.model_copy(
        update={
            "facts": "trace",
            "arch": arch,
            "registers": f.registers,
            "shared_bytes": f.shared_bytes,
            "occupancy": occ,
            "limiter": lim,
            "note": note
            + "; registers and shared memory as the trace's launch record gives them (no spills)",
        }
    )


STRICT = ("exact symbol", "same normalized name")
NO_ARCH_OCCUPANCY = (
    "no occupancy: the join was given no GPU architecture (the capture's meta names none), and each "
    "architecture allocates registers and shared memory by its own rules; capture again with the GPU "
    "visible to torch (the runner records its arch)"
)
# file-name prefixes, most likely home of a trace's kernels first (after the user's own files)
LIKELY = ("libtorch_cuda", "libcublasLt", "libcublas", "libcudnn", "libflash", "libc10_cuda")


def _is_library(p: Path) -> bool:
    """A shared library (searched lazily), as opposed to a code-object file (always read)."""
    return ".so" in p.name


def search_order(objects: Sequence[Path]) -> list[Path]:
    """The user's files and the Triton cache first (as given), then PyTorch's and the BLAS/DNN libraries,
    then the rest smallest first."""

    def rank(p: Path) -> tuple[int, int]:
        name = p.name
        if not _is_library(p):
            return (0, 0)
        for i, prefix in enumerate(LIKELY):
            if name.startswith(prefix):
                return (1 + i, 0)
        try:
            return (len(LIKELY) + 1, p.stat().st_size)
        except OSError:
            return (len(LIKELY) + 2, 0)

    return sorted(dict.fromkeys(Path(o) for o in objects), key=rank)


def join_with_index(
    names: list[str], index: SymbolIndex, block_sizes: dict[str, int], objects: Sequence[Path] = ()
) -> list[JoinedKernel]:
    """`join_names` over an index already built (a caller joining several name lists reuses one)."""
    keys = {n: name_keys(n) for n in names}
    cands = {n: _candidates(index, n, keys[n]) for n in names}
    index.keys_of(sorted({i for ids in cands.values() for i in ids}))
    out = []
    for n in names:
        hit, how, note = _pick(index, keys[n], cands[n], n)
        if hit is None:
            out.append(
                JoinedKernel(name=n, matched=False, note=note or _why_unmatched(index, keys[n], objects))
            )
        else:
            out.append(_facts(n, index.syms[hit], how, note, block_sizes.get(n)))
    return out


def _candidates(index: SymbolIndex, name: str, keys: NameKeys) -> list[int]:
    if name in index.exact:
        return index.exact[name]
    ids = index.candidates(keys.own)
    if not ids and keys.cut and keys.own:
        # the cut may fall inside the own identifier: search its start
        ids = [i for i in range(len(index.syms)) if keys.own in index.syms[i].kernel.name]
    return ids


def _pick(index: SymbolIndex, keys: NameKeys, ids: list[int], name: str) -> tuple[int | None, str, str]:
    """(symbol index, how, note) by the strictest key that singles out one kernel.

    Every looser key is a prefix of the full one (`full` = `no_params` + parameters; `no_params` =
    `base` + template arguments), so candidates are compared by prefix on their full keys: a generic
    kernel (`elementwise_kernel`) has thousands of instantiations in libtorch_cuda."""
    if not ids:
        return None, "", ""
    if name in index.exact:
        return ids[0], "exact symbol", _dup_note(index, ids)
    full = {i: _f(index.syms[i]) for i in ids}
    strict = [i for i in ids if full[i] == keys.full]
    if strict:
        return strict[0], "same normalized name", _dup_note(index, strict)
    tiers = [("same name without parameters", [i for i in ids if _extends(full[i], keys.no_params, "(")])]
    if keys.cut:
        tiers.append(("cut name, only prefix match", [i for i in ids if full[i].startswith(keys.full)]))
    for how, hits in tiers:
        if hits and len(_distinct(index, hits)) == 1:
            return hits[0], how, _dup_note(index, hits)
    same_base = [i for i in ids if _extends(full[i], keys.base, "<(")]
    distinct = _distinct(index, same_base)
    if len(distinct) == 1:
        return same_base[0], "same qualified name, only candidate", _dup_note(index, same_base)
    if len(distinct) > 1:
        return _closest(index, keys, list(distinct.values()), len(distinct))
    return None, "", ""


def _extends(full: str, prefix: str, after: str) -> bool:
    """`full` is `prefix` itself or `prefix` followed by one of `after` (a parameter or template list)."""
    return full == prefix or (full.startswith(prefix) and full[len(prefix) : len(prefix) + 1] in after)


def _f(s: _Sym) -> str:
    assert s.full is not None  # filled by SymbolIndex.keys_of before _pick runs
    return s.full


def _distinct(index: SymbolIndex, ids: list[int]) -> dict[str, int]:
    """symbol name -> first index: the same kernel in several code objects (sm_90 and sm_90a) counts once."""
    out: dict[str, int] = {}
    for i in ids:
        out.setdefault(index.syms[i].kernel.name, i)
    return out


CLOSEST_SHORTLIST = 16  # candidates scored in full after a cheap upper-bound pass


def _closest(index: SymbolIndex, keys: NameKeys, ids: list[int], n: int) -> tuple[int | None, str, str]:
    """The instantiation spelled most like the trace's name, when it is clearly the closest."""
    target = keys.full
    # cheap upper bounds first (length only, then letter counts), the full ratio on a shortlist only
    by_len = sorted(ids, key=lambda i: abs(len(_f(index.syms[i])) - len(target)))[: 4 * CLOSEST_SHORTLIST]
    quick = sorted(
        ((difflib.SequenceMatcher(None, target, _f(index.syms[i])).quick_ratio(), i) for i in by_len),
        reverse=True,
    )[:CLOSEST_SHORTLIST]
    scored = sorted(
        ((difflib.SequenceMatcher(None, target, _f(index.syms[i])).ratio(), i) for _, i in quick),
        reverse=True,
    )
    best, i = scored[0]
    runner = scored[1][0] if len(scored) > 1 else 0.0
    if best >= CLOSEST_MIN and best > runner:
        return (
            i,
            "closest of several",
            f"{n} instantiations share {keys.base}; similarity {best:.3f} vs {runner:.3f}",
        )
    return (
        None,
        "",
        f"ambiguous: {n} symbols named {keys.base} and the trace's spelling does not single one out "
        f"(best similarity {best:.3f}, runner-up {runner:.3f})",
    )


def _dup_note(index: SymbolIndex, ids: list[int]) -> str:
    wheres = {index.syms[i].where for i in ids}
    if len(wheres) <= 1:
        return ""
    regs = {index.syms[i].kernel.registers for i in ids}
    same = "same registers" if len(regs) == 1 else f"registers differ: {sorted(r or 0 for r in regs)}"
    return f"found in {len(wheres)} code objects ({same}); the first is shown"


def _why_unmatched(index: SymbolIndex, keys: NameKeys, objects: Sequence[Path]) -> str:
    if not objects:
        return "no code objects given to join against"
    if not index.syms:
        return (
            f"no kernel for {index.arch or 'any target'} in the {len(objects)} code object(s) given "
            "(entries for other targets are not read)"
        )
    return (
        f"no symbol named {keys.own!r} among {len(index.syms)} kernels of {len(index.load_s_by_object)} "
        "code object(s) "
        "(a library not mapped at capture, a JIT kernel outside the Triton cache, or another architecture)"
    )


def _occupancy(k: KernelResources, block: int | None, dyn: int = 0) -> tuple[str | None, str | None, str]:
    """(occupancy text, limiter, why none) of a joined kernel at its launch block and dynamic shared bytes,
    from `isa.occupancy`."""
    from kernelpilot.isa.occupancy import occupancy_for

    try:
        o = occupancy_for(k, None, block, dyn)
    except KernelpilotError as exc:
        return None, None, f"no occupancy: {exc.message}"
    text = f"{o.occupancy_pct:.1f}% ({o.resident_warps}/{o.max_warps} {o.per_unit}) at block {o.block_size}"
    return text, o.limiter, ""


def _facts(name: str, sym: _Sym, how: str, note: str, block: int | None) -> JoinedKernel:
    k = sym.kernel
    notes = [note] if note else []
    spills = None
    if k.spills_recorded and k.spill_store_bytes is not None:
        spills = k.spill_store_bytes + (k.spill_load_bytes or 0)
    elif k.vendor == "nvidia":
        notes.append(f"spills not recorded in a cubin (stack frame {k.stack_frame_bytes} B)")
    elif k.vgpr_spills or k.sgpr_spills:
        notes.append(f"spilled registers: {k.vgpr_spills or 0} VGPR, {k.sgpr_spills or 0} SGPR")
    occ, lim, why = _occupancy(k, block)
    if why:
        notes.append(why)
    return JoinedKernel(
        name=name,
        matched=True,
        how=how,
        facts="code object",
        code_object=sym.where,
        symbol=k.name,
        arch=k.arch,
        registers=k.registers,
        spills_bytes=spills,
        shared_bytes=k.static_shared_bytes,
        occupancy=occ,
        limiter=lim,
        note="; ".join(notes),
    )


def with_origins(joined: list[JoinedKernel], origins: dict[str, str]) -> list[JoinedKernel]:
    """Each matched kernel's `origin`: `origins[file]` where the capture recorded one (cubins captured
    through CUPTI), else by the file's kind."""
    out = []
    for j in joined:
        if j.code_object is None:
            out.append(j)
            continue
        path = _file_of(j.code_object, origins)
        how = origins.get(path) or ("mapped library" if ".so" in Path(path).name else "code object file")
        out.append(j.model_copy(update={"origin": how}))
    return out


def _file_of(code_object: str, known: dict[str, str]) -> str:
    """The file part of '<file>:<entry label>' (entry labels hold colons too: match known files first)."""
    for f in known:
        if code_object.startswith(f + ":"):
            return f
    return code_object.split(":", 1)[0]


def join_bench(
    objects: list[Path], names: list[str], arch: str | None, runs: int = 5
) -> tuple[list[float], int]:
    """Wall seconds of `runs` joins of `names` (each builds its index afresh) and the names matched."""
    times: list[float] = []
    matched = 0
    from kernelpilot.workload.names import clear_demangle_cache

    for _ in range(runs):
        clear_demangle_cache()
        t0 = time.perf_counter()
        res = join_names(names, objects, arch)
        times.append(time.perf_counter() - t0)
        matched = sum(r.matched for r in res)
    return times, matched
