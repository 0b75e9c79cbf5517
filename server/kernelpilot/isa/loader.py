"""Open any supported file and list its code objects and kernels.

Supported: cubin, HSACO, standalone fatbin, clang offload bundle (plain or CCOB-compressed), PTX text, and
host ELF executables/shared libraries embedding `.nv_fatbin` / `__nv_relfatbin` / `.hip_fatbin`.
Fatbins with many cubins (large libraries) are decompressed and parsed by forked worker processes, one per
core, where `fork` is available and safe; results and errors are the same as reading them in-process.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import contextlib
import functools
import gc
import mmap
import multiprocessing
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.isa import bundle as bundle_mod
from kernelpilot.isa import compress
from kernelpilot.isa import fatbin as fatbin_mod
from kernelpilot.isa.cubin import KernelRow, cubin_rows, kernels_from_rows, ptx_entries, read_cubin
from kernelpilot.isa.cubin_elf import CubinElf
from kernelpilot.isa.demangle import demangle_all
from kernelpilot.isa.elf import EM_AMDGPU, EM_CUDA, ElfImage, is_elf
from kernelpilot.isa.errors import CodeObjectError, UnsupportedCodeObjectError
from kernelpilot.isa.hsaco import read_hsaco
from kernelpilot.isa.models import CodeObjectEntry, KernelResources

HOST_FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
HOST_HIP_SECTIONS = (".hip_fatbin",)


@dataclass
class Loaded:
    path: Path
    entries: list[CodeObjectEntry] = field(default_factory=list)
    kernels: list[KernelResources] = field(default_factory=list)
    # entry label -> function returning the code object's bytes (re-decompressed on demand, for disassembly)
    payloads: dict[str, Callable[[], bytes | memoryview]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _open(path: Path) -> memoryview:
    if not path.exists():
        raise InputFileError(f"{path}: file not found", "give the path of a cubin, fatbin, HSACO or binary")
    if not path.is_file():
        raise InputFileError(f"{path}: not a regular file", "give a file, not a directory")
    size = path.stat().st_size
    if size == 0:
        raise CodeObjectError(str(path), "file is empty")
    try:
        with path.open("rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise InputFileError(
            f"{path}: cannot read ({exc.strerror})", "check the path and permissions"
        ) from exc
    return memoryview(mm)


def arch_matches(arch: str | None, wanted: str | None) -> bool:
    """Whether a code object's target is the wanted one; `wanted` may list several, comma-separated
    (`sm_90,sm_90a`: an H100 runs both)."""
    if not wanted:
        return True
    if arch is None:
        return False
    a = arch.lower().replace("compute_", "sm_")
    for w in wanted.lower().replace("compute_", "sm_").split(","):
        w = w.strip()
        if a == w or a.split(":")[0] == w:
            return True
    return False


def load(
    path: Path,
    *,
    arch: str | None = None,
    want_kernels: bool = True,
    keep_payloads: bool = False,
    demangle: bool = True,
    count_ptx: bool = False,
) -> Loaded:
    """Parse `path`; entries are always listed, kernels only for entries matching `arch`."""
    with gc_paused():
        return _load(
            path,
            arch=arch,
            want_kernels=want_kernels,
            keep_payloads=keep_payloads,
            demangle=demangle,
            count_ptx=count_ptx,
        )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for a block that builds ~10^5 models, lists and dicts with no cycles: its
    repeated passes over the growing heap cost more than building them.

    Left at that, the first allocation after re-enabling would walk everything built meanwhile (all of it
    still "young"): ~0.1 s for a cuBLAS-sized result. So, unless the application uses `gc.freeze` itself,
    the block's survivors are moved to the oldest generation (freeze + unfreeze: two list splices, no walk),
    where only a full collection looks at them, as it would at anything long-lived."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def _load(
    path: Path,
    *,
    arch: str | None,
    want_kernels: bool,
    keep_payloads: bool,
    demangle: bool,
    count_ptx: bool,
) -> Loaded:
    label = str(path)
    buf = _open(path)
    out = Loaded(path)
    head = bytes(buf[:24])
    if is_elf(head):
        machine = int.from_bytes(head[18:20], "little") if len(head) >= 20 else None  # e_machine, ELF64 LE
        if machine == EM_CUDA:
            _add_cubin(out, None, buf, label, path.name, 0, "file", None, arch, want_kernels, keep_payloads)
        else:
            elf = ElfImage(buf, label)
            if elf.machine == EM_AMDGPU:
                _add_hsaco(
                    out, elf, buf, label, path.name, 0, "file", None, arch, want_kernels, keep_payloads
                )
            else:
                _add_host(out, elf, buf, label, arch, want_kernels, keep_payloads, count_ptx)
    elif head[:4] == fatbin_mod.FATBIN_MAGIC_BYTES:
        _add_fatbin(out, buf, label, 0, len(buf), arch, want_kernels, keep_payloads, count_ptx)
    elif bundle_mod.is_bundle(head):
        _add_bundle(out, buf, label, 0, arch, want_kernels, keep_payloads)
    elif _looks_like_ptx(buf):
        text = bytes(buf).decode("utf-8", "replace")
        tgt = _ptx_target(text)
        out.entries.append(
            CodeObjectEntry(
                index=0,
                label=path.name,
                kind="ptx",
                vendor="nvidia",
                arch=tgt,
                container="file",
                offset=0,
                size_bytes=len(buf),
                kernel_count=len(ptx_entries(text)),
                note="PTX is not compiled: no register/shared figures until ptxas runs",
            )
        )
    else:
        raise CodeObjectError(
            label,
            f"not a GPU code object: starts with {head[:8].hex()} (expected ELF, fatbin 50ed55ba, "
            "__CLANG_OFFLOAD_BUNDLE__ or CCOB)",
        )
    for k in out.kernels:
        kid = f"{k.entry}::{k.name}"
        if k.kernel_id != kid:
            _set_field(k, "kernel_id", kid)
    if demangle and out.kernels:
        names = demangle_all([k.name for k in out.kernels])
        for k in out.kernels:
            d = names.get(k.name)
            if d is not None and k.demangled != d:
                _set_field(k, "demangled", d)
    return out


def _set_field(k: KernelResources, name: str, value: str) -> None:
    """What pydantic's __setattr__ does for a plain field of a model without validate_assignment (the value
    into __dict__, the name into the fields-set), minus its dispatch: at ~10^5 kernels that costs more than
    the rest of the fix-up loops in `_load`."""
    k.__dict__[name] = value
    k.__pydantic_fields_set__.add(name)


def _looks_like_ptx(buf: memoryview) -> bool:
    head = bytes(buf[:4096]).decode("utf-8", "replace")
    return ".version" in head and ".target" in head


def _ptx_target(text: str) -> str | None:
    m = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
    return m.group(1).replace("sm_", "compute_") if m else None


def _append_entry(
    out: Loaded,
    kind: Literal["cubin", "hsaco"],
    vendor: Literal["nvidia", "amd"],
    arch: str | None,
    entry_label: str,
    container: str,
    offset: int,
    size_bytes: int,
    compressed: str | None,
    count: int | None,
) -> None:
    """Record one ELF code object found in the file (cubin or HSACO), in file order."""
    out.entries.append(
        CodeObjectEntry(
            index=len(out.entries),
            label=entry_label,
            kind=kind,
            vendor=vendor,
            arch=arch,
            container=container,
            offset=offset,
            size_bytes=size_bytes,
            compressed=compressed,
            kernel_count=count,
        )
    )


def _add_cubin(
    out: Loaded,
    elf: CubinElf | None,
    buf: bytes | memoryview,
    label: str,
    entry_label: str,
    offset: int,
    container: str,
    compressed: str | None,
    arch: str | None,
    want: bool,
    keep: bool,
) -> None:
    from kernelpilot.isa.cubin import cubin_arch

    e = elf or CubinElf(buf, f"{label}:{entry_label}")
    a = cubin_arch(e)
    count: int | None = None
    if want and arch_matches(a, arch):
        ks = read_cubin(e, f"{label}:{entry_label}", entry_label)
        out.kernels.extend(ks)
        count = sum(1 for k in ks if k.is_entry)
        out.payloads[entry_label] = lambda b=buf: b  # type: ignore[misc]
    _append_entry(out, "cubin", "nvidia", a, entry_label, container, offset, len(buf), compressed, count)


def _add_hsaco(
    out: Loaded,
    elf: ElfImage | None,
    buf: bytes | memoryview,
    label: str,
    entry_label: str,
    offset: int,
    container: str,
    compressed: str | None,
    arch: str | None,
    want: bool,
    keep: bool,
) -> None:
    e = elf or ElfImage(buf, f"{label}:{entry_label}")
    ks = read_hsaco(e, f"{label}:{entry_label}", entry_label)
    a = ks[0].arch if ks else None
    if not ks:
        from kernelpilot.isa.hsaco import MACH_TO_GFX

        a = MACH_TO_GFX.get(e.e_flags & 0xFF)
    count = len(ks)
    if want and arch_matches(a, arch):
        out.kernels.extend(ks)
        out.payloads[entry_label] = lambda b=buf: b  # type: ignore[misc]
    _append_entry(out, "hsaco", "amd", a, entry_label, container, offset, len(buf), compressed, count)


def _add_host(
    out: Loaded,
    elf: ElfImage,
    buf: memoryview,
    label: str,
    arch: str | None,
    want: bool,
    keep: bool,
    count_ptx: bool = False,
) -> None:
    found = False
    for name in HOST_FATBIN_SECTIONS:
        sec = elf.section(name)
        if sec is not None and sec.size:
            found = True
            _add_fatbin(out, buf, label, sec.offset, sec.offset + sec.size, arch, want, keep, count_ptx)
    for name in HOST_HIP_SECTIONS:
        sec = elf.section(name)
        if sec is not None and sec.size:
            found = True
            pos = sec.offset
            end = sec.offset + sec.size
            raw = bytes(buf[pos:end])
            starts = sorted(
                {m.start() for m in re.finditer(re.escape(bundle_mod.BUNDLE_MAGIC), raw)}
                | {m.start() for m in re.finditer(bundle_mod.CCOB_MAGIC, raw)}
            )
            for s in starts:
                _add_bundle(out, memoryview(raw), label, s, arch, want, keep, base_offset=pos)
    if not found:
        raise UnsupportedCodeObjectError(
            f"{label}: {elf.machine_name} ELF with no GPU code (no .nv_fatbin, __nv_relfatbin or .hip_fatbin "
            "section)",
            "give a cubin/HSACO, a fatbin, or a binary built with nvcc/hipcc device code",
        )


def _add_fatbin(
    out: Loaded,
    buf: memoryview,
    label: str,
    start: int,
    end: int,
    arch: str | None,
    want: bool,
    keep: bool,
    count_ptx: bool = False,
) -> None:
    ents = fatbin_mod.scan_fatbins(buf, label, start, end)
    base = Path(label).name
    todo: list[tuple[int, fatbin_mod.FatEntry, str]] = []
    # first the plan (which entries are read), so a worker pool can start before the entry models are built
    plan: list[tuple[fatbin_mod.FatEntry, str, str]] = []  # (entry, label, what to do with it)
    for n, fe in enumerate(ents, start=1):
        suffix = "ptx" if fe.kind == fatbin_mod.KIND_PTX else "cubin"
        elabel = f"{base}.{n}.{fe.arch_name}.{suffix}"
        if fe.kind == fatbin_mod.KIND_PTX:
            what = "ptx"
        elif fe.kind != fatbin_mod.KIND_ELF:
            what = "other"
        elif not (want and arch_matches(fe.arch_name, arch)):
            what = "skip"
        else:
            what = "read"
            todo.append((len(out.entries) + len(plan), fe, elabel))
        plan.append((fe, elabel, what))
    reader = _CubinReader(buf, label, todo)
    try:
        for fe, elabel, what in plan:
            common = dict(
                index=len(out.entries),
                label=elabel,
                vendor="nvidia",
                arch=fe.arch_name,
                container="fatbin",
                offset=fe.offset,
                size_bytes=fe.size,
                compressed=fe.compression,
            )
            if what == "ptx":
                count = None
                if count_ptx and arch_matches(fe.arch_name, arch):
                    text = bytes(fatbin_mod.entry_payload(buf, fe, f"{label}:{elabel}")).rstrip(b"\0")
                    count = len(ptx_entries(text.decode("utf-8", "replace")))
                entry = CodeObjectEntry(kind="ptx", kernel_count=count, **common)
            elif what == "other":
                note = f"fatbin entry kind {fe.kind} is not read"
                entry = CodeObjectEntry(kind="other", note=note, **common)
            elif what == "skip":
                entry = CodeObjectEntry(kind="cubin", decompressed=False, **common)
            else:
                entry = CodeObjectEntry(kind="cubin", **common)
            out.entries.append(entry)
        results: list[tuple[int, list[KernelResources]]] = []
        fe_by_idx = {idx: fe for idx, fe, _ in todo}
        for idx, elabel, ks in reader.results():
            out.payloads[elabel] = functools.partial(
                fatbin_mod.entry_payload, buf, fe_by_idx[idx], f"{label}:{elabel}"
            )
            results.append((idx, ks))
    finally:
        reader.close()
    for idx, ks in results:
        out.kernels.extend(ks)
        out.entries[idx].kernel_count = sum(1 for k in ks if k.is_entry)


PREFETCH = 16  # compressed entries decompressed ahead on a helper thread (bounded memory)
# Fatbins with at least this many compressed cubins are decompressed and parsed by a pool of forked worker
# processes (one per core): below it the pool's start-up costs more than it saves.
POOL_MIN_ENTRIES = 512
POOL_CHUNK = 24  # at most this many cubins per task handed to a worker
POOL_CHUNK_BYTES = 32 << 20  # ... and about this many decompressed bytes (one big cubin is a task of its own)
_Todo = list[tuple[int, fatbin_mod.FatEntry, str]]


def _chunks(todo: _Todo) -> list[_Todo]:
    """Worker tasks, largest first: entries sorted by decompressed size and packed up to POOL_CHUNK entries /
    POOL_CHUNK_BYTES, so the few huge cubins start at once and small tasks fill in at the end (the pool's
    wall time is not set by one big cubin handed out last)."""
    order = sorted(todo, key=lambda t: -t[1].decompressed_size)
    out: list[_Todo] = []
    cur: _Todo = []
    size = 0
    for item in order:
        n = item[1].decompressed_size or item[1].size
        if cur and (len(cur) >= POOL_CHUNK or size + n > POOL_CHUNK_BYTES):
            out.append(cur)
            cur, size = [], 0
        cur.append(item)
        size += n
    if cur:
        out.append(cur)
    return out


class _CubinReader:
    """Reads every cubin in `todo`; `results()` gives (entry index, entry label, kernels) in order.

    Large fatbins are read by a pool of forked workers, started here at once so they work while the caller
    builds its entry list: each worker decompresses and parses whole entries and sends back plain rows,
    validated into models here as they arrive. An entry a worker fails on is read again here (in file order,
    after the rest), so errors are the same typed errors as without the pool; if the pool breaks (a worker
    killed) whatever it did not finish is read here. `close()` always shuts the pool down."""

    def __init__(self, buf: memoryview, label: str, todo: _Todo) -> None:
        self.buf, self.label, self.todo = buf, label, todo
        self.tasks = _chunks(todo)
        self.futures: dict[concurrent.futures.Future[_WorkerOut], int] = {}
        self.pool = _fork_pool(buf, label, todo, self.tasks)
        if self.pool is None:
            return
        try:
            for n in range(len(self.tasks)):
                self.futures[self.pool.submit(_worker_rows, n)] = n
        except Exception:  # workers that cannot start (BrokenProcessPool, OSError, ...)
            pass  # what was not submitted is read in this process

    def results(self) -> Iterator[tuple[int, str, list[KernelResources]]]:
        buf, label = self.buf, self.label
        if self.pool is None:
            for idx, elabel, payload in _payloads(buf, label, self.todo):
                yield idx, elabel, read_cubin(payload, f"{label}:{elabel}", elabel)
            return
        done: dict[int, list[KernelResources]] = {}
        for fut in concurrent.futures.as_completed(self.futures):
            try:
                rows_list = fut.result()
            except Exception:
                continue  # a broken pool: these entries are read below
            task = self.tasks[self.futures[fut]]
            for (idx, _fe, elabel), (arch, rows) in zip(task, rows_list, strict=True):
                if arch is not None and rows is not None:
                    done[idx] = kernels_from_rows(rows, arch, elabel, with_id=True)
        self.close()
        for idx, fe, elabel in self.todo:
            ks = done.pop(idx, None)
            if ks is None:
                elabel_full = f"{label}:{elabel}"
                ks = read_cubin(fatbin_mod.entry_payload(buf, fe, elabel_full), elabel_full, elabel)
            yield idx, elabel, ks

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _fork_pool(
    buf: memoryview, label: str, todo: _Todo, tasks: list[_Todo]
) -> concurrent.futures.ProcessPoolExecutor | None:
    """A pool of one forked worker per core, or None where it does not pay or is not safe: few entries, one
    core, no `fork` start method, other threads running, or a daemonic process. (Forking a threaded process,
    such as the MCP server running tools in worker threads, can deadlock the child on a lock another thread
    held; "spawn"/"forkserver" workers would re-import the host's main module. So there the file is read
    in this process, ZSTD decompression overlapping parsing on a helper thread.)
    The workers inherit `tasks` through the fork, so a task is sent to them as its number alone."""
    cores = _usable_cores()
    if (
        len(todo) < POOL_MIN_ENTRIES
        or cores < 2
        or "fork" not in multiprocessing.get_all_start_methods()
        or threading.active_count() > 1
        or multiprocessing.current_process().daemon
    ):
        return None
    try:
        return concurrent.futures.ProcessPoolExecutor(
            cores, multiprocessing.get_context("fork"), _worker_init, (buf, label, tasks)
        )
    except (OSError, ValueError, NotImplementedError):
        return None


POOL_MAX_WORKERS = 16  # beyond this the parent (building models, forking) is the bottleneck, not the workers


def _usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which containers and `taskset` narrow), capped at
    POOL_MAX_WORKERS: each worker costs the parent a fork of its whole address space."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, POOL_MAX_WORKERS))


_WorkerOut = list[tuple[str | None, list[KernelRow] | None]]
_worker_state: tuple[memoryview, str, list[_Todo]] | None = None
_worker_scratch = compress.Scratch()  # each forked worker decompresses into its own reused buffer


def _worker_init(buf: memoryview, label: str, tasks: list[_Todo]) -> None:
    global _worker_state
    _worker_state = (buf, label, tasks)


def _worker_rows(task: int) -> _WorkerOut:
    """In a worker: (arch, rows) of each cubin of task number `task`; (None, None) where reading it raised."""
    assert _worker_state is not None
    buf, label, tasks = _worker_state
    out: _WorkerOut = []
    for _idx, fe, elabel in tasks[task]:
        try:
            payload = fatbin_mod.entry_payload(buf, fe, f"{label}:{elabel}", _worker_scratch)
            out.append(cubin_rows(CubinElf(payload, f"{label}:{elabel}")))
        except Exception:
            out.append((None, None))
    return out


def _payloads(
    buf: memoryview, label: str, todo: list[tuple[int, fatbin_mod.FatEntry, str]]
) -> Iterator[tuple[int, str, bytes | memoryview]]:
    """Payloads in order; ZSTD/LZ4 decompression of the next few entries overlaps parsing of the current one
    (the ZSTD decoder releases the GIL), with at most PREFETCH decompressed entries held at once."""
    if sum(1 for _, fe, _ in todo if fe.compression) < PREFETCH:
        for idx, fe, elabel in todo:
            yield idx, elabel, fatbin_mod.entry_payload(buf, fe, f"{label}:{elabel}")
        return
    import collections
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(4, (os.cpu_count() or 2) - 1))) as pool:
        window: collections.deque[tuple[int, str, concurrent.futures.Future[bytes | memoryview]]] = (
            collections.deque()
        )
        it = iter(todo)
        for idx, fe, elabel in it:
            window.append((idx, elabel, pool.submit(fatbin_mod.entry_payload, buf, fe, f"{label}:{elabel}")))
            if len(window) >= PREFETCH:
                break
        while window:
            idx, elabel, fut = window.popleft()
            nxt = next(it, None)
            if nxt is not None:
                window.append(
                    (nxt[0], nxt[2], pool.submit(fatbin_mod.entry_payload, buf, nxt[1], f"{label}:{nxt[2]}"))
                )
            yield idx, elabel, fut.result()


def _add_bundle(
    out: Loaded,
    buf: memoryview,
    label: str,
    start: int,
    arch: str | None,
    want: bool,
    keep: bool,
    base_offset: int = 0,
) -> None:
    data: bytes | memoryview = buf[start:]
    container = "offload-bundle"
    compressed = None
    if bytes(data[:4]) == bundle_mod.CCOB_MAGIC:
        data, compressed = bundle_mod.decompress_ccob(data, label)
        container = "compressed-offload-bundle"
    entries = bundle_mod.parse_bundle(data, label)
    for be in entries:
        gfx, triple = bundle_mod.bundle_arch(be.triple)
        payload = memoryview(data)[be.offset : be.offset + be.size]
        elabel = f"{Path(label).name}:{triple}"
        if gfx is None or be.size == 0:
            out.entries.append(
                CodeObjectEntry(
                    index=len(out.entries),
                    label=elabel,
                    kind="host" if gfx is None else "other",
                    container=container,
                    offset=be.offset,
                    size_bytes=be.size,
                    compressed=compressed,
                )
            )
            continue
        if is_elf(payload):
            _add_hsaco(out, None, payload, label, elabel, be.offset, container, compressed, arch, want, keep)
        else:
            out.entries.append(
                CodeObjectEntry(
                    index=len(out.entries),
                    label=elabel,
                    kind="other",
                    vendor="amd",
                    arch=gfx,
                    container=container,
                    offset=be.offset,
                    size_bytes=be.size,
                    compressed=compressed,
                    note="device entry is not an ELF code object (bitcode?)",
                )
            )
