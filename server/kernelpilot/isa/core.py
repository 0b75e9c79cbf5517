"""Core functions behind the `isa` capabilities: list, resources, disasm, mix, occupancy, fit."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.validation import require_file
from kernelpilot.isa.api import (
    IsaDisasmRequest,
    IsaDisasmResult,
    IsaFileRequest,
    IsaFitRequest,
    IsaFitResult,
    IsaListRequest,
    IsaListResult,
    IsaMixResult,
    IsaOccupancyRequest,
    IsaOccupancyResult,
    IsaResourcesRequest,
    IsaResourcesResult,
    KernelDisasm,
)
from kernelpilot.isa.errors import KernelNotFoundError
from kernelpilot.isa.loader import Loaded, gc_paused, load
from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy_models import KernelMixModel, OccupancyModel


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise InvalidArgumentError(
            f"--kernel {pattern!r} is not a valid regular expression: {exc}",
            "escape special characters, e.g. 'axpy<float>' -> 'axpy<float>'",
        ) from exc


def _select(req: IsaFileRequest, loaded: Loaded) -> list[KernelResources]:
    pat = _compile(req.kernel)
    ks = [k for k in loaded.kernels if req.include_device_functions or k.is_entry]
    if pat is not None:
        ks = [k for k in ks if pat.search(k.name) or pat.search(k.demangled)]
        if not ks:
            names = sorted({k.demangled for k in loaded.kernels if k.is_entry})[:20]
            raise KernelNotFoundError(
                f"{req.file}: no kernel matches --kernel {req.kernel!r}",
                "kernels here include: " + ", ".join(names) if names else "the file holds no kernels",
            )
    return ks


_PTXAS_FN = re.compile(r"Function properties for (\S+)")
_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_ARCH = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+[af]?)'")


def parse_ptxas_log(text: str) -> dict[tuple[str, str | None], tuple[int, int, int]]:
    """(kernel, arch or None) -> (stack frame, spill store, spill load) bytes from `ptxas -v` output."""
    out: dict[tuple[str, str | None], tuple[int, int, int]] = {}
    arch_of: dict[str, str] = {}
    fn: str | None = None
    for line in text.splitlines():
        m = _PTXAS_ARCH.search(line)
        if m:
            arch_of[m.group(1)] = m.group(2)
        m = _PTXAS_FN.search(line)
        if m:
            fn = m.group(1)
            continue
        m = _PTXAS_SPILL.search(line)
        if m and fn:
            vals = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            out[(fn, arch_of.get(fn))] = vals
            out[(fn, None)] = vals
            fn = None
    return out


def _apply_ptxas_log(req: IsaFileRequest, ks: list[KernelResources]) -> None:
    if not req.ptxas_log:
        return
    p = require_file(req.ptxas_log, "--ptxas-log", "give the saved output of nvcc -Xptxas -v")
    table = parse_ptxas_log(p.read_text(errors="replace"))
    for k in ks:
        vals = table.get((k.name, k.arch)) or table.get((k.name, None))
        if vals:
            k.spill_store_bytes, k.spill_load_bytes = vals[1], vals[2]
            k.spills_recorded = True


_Fn = TypeVar("_Fn", bound=Callable[..., object])


def _whole_call_gc_paused(fn: _Fn) -> _Fn:
    """Run a capability with the cyclic collector paused from load to result (see `loader.gc_paused`)."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> object:
        with gc_paused():
            return fn(*args, **kwargs)

    return cast(_Fn, wrapper)


def _load(req: IsaFileRequest | IsaListRequest, **kw: bool) -> Loaded:
    return load(Path(req.file), arch=req.arch, **kw)


@_whole_call_gc_paused
def isa_list(req: IsaListRequest) -> IsaListResult:
    from kernelpilot.isa.api import ListedKernel
    from kernelpilot.isa.demangle import demangle_all

    loaded = _load(req, want_kernels=True, demangle=False, count_ptx=True)
    entries = [k for k in loaded.kernels if k.is_entry]
    shown = entries[: req.max_names]
    names = demangle_all([k.name for k in shown])  # only the listed ones: a library holds ~10^5 kernels
    return IsaListResult(
        file=req.file,
        entries=loaded.entries,
        kernels=[
            ListedKernel(entry=k.entry, name=k.name, demangled=names.get(k.name, k.name)) for k in shown
        ],
        kernel_names_left_off=len(entries) - len(shown),
        warnings=loaded.warnings,
    )


@_whole_call_gc_paused
def isa_resources(req: IsaResourcesRequest) -> IsaResourcesResult:
    loaded = _load(req)
    ks = _select(req, loaded)
    _apply_ptxas_log(req, ks)
    res = IsaResourcesResult(
        file=req.file,
        kernel_count=len(ks),
        kernels=ks,
        entries=loaded.entries,
        warnings=list(loaded.warnings),
    )
    if req.manifest:
        # the manifest is a file, not a reply: it holds every kernel, whatever max_kernels says
        res.manifest_path = req.manifest
        _write_atomic(Path(req.manifest), res.model_dump_json(indent=1))
    if len(ks) > req.max_kernels:
        res.kernels = ks[: req.max_kernels]
        res.warnings.append(
            f"listing the first {req.max_kernels} of {len(ks)} kernels: narrow with --kernel REGEX or "
            "--arch, raise --max-kernels, or write them all with --manifest FILE"
            + (f" (done: {req.manifest})" if req.manifest else "")
        )
    return res


def _write_atomic(path: Path, text: str) -> None:
    write_text_atomic(path, text, arg="--manifest")  # the output-path policy: foundation.atomic


def _mixes(
    req: IsaFileRequest,
    loaded: Loaded,
    ks: list[KernelResources],
    keep_text: bool = False,
) -> dict[tuple[str, str], tuple[KernelMixModel, list[str]]]:
    from kernelpilot.isa.disasm import disassemble, parse_amdgcn, parse_sass

    wanted_entries = {k.entry for k in ks}
    waves = {(k.entry, k.name): k.wavefront_size for k in ks}
    out: dict[tuple[str, str], tuple[KernelMixModel, list[str]]] = {}
    for ent in loaded.entries:
        if ent.label not in wanted_entries or ent.label not in loaded.payloads:
            continue
        vendor = ent.vendor or "nvidia"
        text = disassemble(loaded.payloads[ent.label](), vendor, ent.arch or "")
        parsed = parse_sass(text, keep_text) if vendor == "nvidia" else parse_amdgcn(text, keep_text)
        for name, m in parsed.items():
            model = KernelMixModel(
                kernel=name,
                arch=ent.arch or "",
                entry=ent.label,
                instructions=m.instructions,
                families=dict(m.families),
                global_load_bits=dict(m.global_load_bits),
                global_store_bits=dict(m.global_store_bits),
                shared_bits=dict(m.shared_bits),
                top_opcodes=dict(m.opcodes.most_common(16)),
                issued_instructions=m.issued,
                pipe_classes=dict(m.pipes),
                backward_branches=m.backward_branches,
                forward_branches=m.forward_branches,
                wavefront_size=waves.get((ent.label, name)) if vendor == "amd" else None,
            )
            out[(ent.label, name)] = (model, m.text)
    return out


@_whole_call_gc_paused
def isa_disasm(req: IsaDisasmRequest) -> IsaDisasmResult:
    loaded = _load(req, keep_payloads=True)
    ks = _select(req, loaded)[: req.max_kernels]
    mixes = _mixes(req, loaded, ks, keep_text=True)
    out = []
    for k in ks:
        got = mixes.get((k.entry, k.name))
        if got is None:
            continue
        lines = got[1]
        out.append(
            KernelDisasm(
                kernel=k.demangled,
                arch=k.arch,
                entry=k.entry,
                lines=lines[: req.max_lines],
                truncated=len(lines) > req.max_lines,
            )
        )
    tool = "nvdisasm" if any(k.vendor == "nvidia" for k in ks) else "llvm-objdump"
    return IsaDisasmResult(file=req.file, tool=tool, kernels=out)


@_whole_call_gc_paused
def isa_mix(req: IsaFileRequest) -> IsaMixResult:
    loaded = _load(req, keep_payloads=True)
    ks = _select(req, loaded)[: req.max_kernels]
    mixes = _mixes(req, loaded, ks)
    return IsaMixResult(
        file=req.file, kernels=[mixes[(k.entry, k.name)][0] for k in ks if (k.entry, k.name) in mixes]
    )


def _occ(k: KernelResources, req: IsaOccupancyRequest) -> OccupancyModel:
    from kernelpilot.isa.occupancy import occupancy_for

    return occupancy_for(k, req.target_arch, req.block_size, req.dynamic_shared_bytes)


@_whole_call_gc_paused
def isa_occupancy(req: IsaOccupancyRequest) -> IsaOccupancyResult:
    loaded = _load(req)
    ks = _select(req, loaded)[: req.max_kernels]
    return IsaOccupancyResult(file=req.file, results=[_occ(k, req) for k in ks])


@_whole_call_gc_paused
def isa_fit(req: IsaFitRequest) -> IsaFitResult:
    from kernelpilot.foundation.errors import ToolchainError
    from kernelpilot.isa.fit import fit_report

    loaded = _load(req, keep_payloads=req.disassemble)
    ks = _select(req, loaded)[: req.max_kernels]
    _apply_ptxas_log(req, ks)
    mixes: dict[tuple[str, str], tuple[KernelMixModel, list[str]]] = {}
    mix_note, mix_fix = "", ""
    if req.disassemble:
        try:
            mixes = _mixes(req, loaded, ks)
        except ToolchainError as exc:
            mix_note, mix_fix = f"no instruction mix: {exc.message}", exc.hint
    else:
        mix_note, mix_fix = "disassemble=false", "run isa fit with --disassemble (MCP: disassemble=true)"
    reports = []
    for k in ks:
        mix = mixes.get((k.entry, k.name), (None, []))[0]
        reports.append(fit_report(k, _occ(k, req), mix, mix_note, mix_fix))
    return IsaFitResult(file=req.file, reports=reports)
