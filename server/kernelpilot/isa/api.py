"""Request/result models of the ISA capabilities (kept import-light: pydantic only)."""

from __future__ import annotations

from pydantic import Field

from kernelpilot.foundation.models import Request, Result
from kernelpilot.isa.models import CodeObjectEntry, KernelResources
from kernelpilot.isa.occupancy_models import FitReport, KernelMixModel, OccupancyModel

_FILE = "path of a cubin, fatbin, HSACO, clang offload bundle, PTX, or a host executable/shared library"
_KERNEL = "regular expression matched (search) against mangled and demangled kernel names"
_ARCH = "only code objects for this target (sm_90, compute_120, gfx942)"


class IsaFileRequest(Request):
    file: str = Field(description=_FILE)
    kernel: str | None = Field(None, description=_KERNEL)
    arch: str | None = Field(None, description=_ARCH)
    include_device_functions: bool = Field(False, description="also list non-kernel device functions")
    ptxas_log: str | None = Field(
        None, description="ptxas -v output file: adds NVIDIA spill bytes per kernel"
    )
    max_kernels: int = Field(
        2000,
        ge=1,
        description="cap on kernels returned (the count is always exact; a warning says when it cut the "
        "list; a manifest file holds them all)",
    )


class IsaResourcesRequest(IsaFileRequest):
    manifest: str | None = Field(
        None,
        description="also write the result as a JSON manifest to this path (atomically); profile rows can "
        "reference its kernels by kernel_id",
    )


class IsaListRequest(Request):
    file: str = Field(description=_FILE)
    arch: str | None = Field(None, description=_ARCH)
    max_names: int = Field(
        200,
        ge=0,
        description="cap on kernel names listed (in file order; `kernel_names_left_off` counts the rest, "
        "`isa resources --kernel REGEX` reads any of them)",
    )


class ListedKernel(Result):
    entry: str = Field(description="label of the code object holding it (CodeObjectEntry.label)")
    name: str = Field(description="mangled symbol, as `--kernel` regexes match it")
    demangled: str = Field(description="readable C++ name (same as name when not mangled)")


class IsaListResult(Result):
    file: str
    entries: list[CodeObjectEntry]
    kernels: list[ListedKernel] = Field(
        default_factory=list, description="kernel entry points, in file order, up to max_names"
    )
    kernel_names_left_off: int = Field(0, description="kernels not listed because of max_names")
    warnings: list[str] = Field(default_factory=list)

    def render_text(self) -> str:
        lines = [f"{self.file}: {len(self.entries)} code object(s)"]
        by_entry: dict[str, list[ListedKernel]] = {}
        for k in self.kernels:
            by_entry.setdefault(k.entry, []).append(k)
        for e in self.entries:
            comp = (
                f" {e.compressed}" + ("" if e.decompressed else " (not decompressed)") if e.compressed else ""
            )
            kc = "" if e.kernel_count is None else f" kernels={e.kernel_count}"
            lines.append(
                f"  [{e.index}] {e.kind:<5} {e.arch or '-':<12} {e.size_bytes:>9} B{comp}{kc}  {e.label}"
                + (f"  ({e.note})" if e.note else "")
            )
            lines += [
                f"      {k.demangled}" + (f"  [{k.name}]" if k.demangled != k.name else "")
                for k in by_entry.get(e.label, [])
            ]
        if self.kernel_names_left_off:
            lines.append(
                f"  ... {self.kernel_names_left_off} more kernel(s) not listed (raise --max-names, or "
                "`kernelpilot isa resources FILE --kernel REGEX` for some of them)"
            )
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


class IsaResourcesResult(Result):
    file: str
    kernel_count: int
    kernels: list[KernelResources]
    entries: list[CodeObjectEntry]
    warnings: list[str] = Field(default_factory=list)
    manifest_version: int = 1
    manifest_path: str | None = None

    def render_text(self) -> str:
        lines = [f"{self.file}: {self.kernel_count} kernel(s) in {len(self.entries)} code object(s)"]
        for k in self.kernels:
            if k.vendor == "nvidia":
                spill = (
                    f" spill st/ld={k.spill_store_bytes}/{k.spill_load_bytes}B" if k.spills_recorded else ""
                )
                lines.append(
                    f"  {k.arch:<7} REG={k.registers} SHARED={k.static_shared_bytes} "
                    f"STACK={k.stack_frame_bytes} BAR={k.barriers} CMEM0={k.constant_banks.get('0')} "
                    f"MAXTHR={k.max_threads_per_block}"
                    f"{spill}  {k.demangled}"
                )
            else:
                lines.append(
                    f"  {k.arch:<7} VGPR={k.registers} AGPR={k.agprs} SGPR={k.sgprs} "
                    f"LDS={k.static_shared_bytes} SCRATCH={k.stack_frame_bytes} WAVE={k.wavefront_size} "
                    f"spills s/v={k.sgpr_spills}/"
                    f"{k.vgpr_spills} MAXWG={k.max_threads_per_block}  {k.demangled}"
                )
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


class IsaDisasmRequest(IsaFileRequest):
    max_lines: int = Field(400, ge=1, description="cap on disassembly lines per kernel")


class KernelDisasm(Result):
    kernel: str
    arch: str
    entry: str
    lines: list[str]
    truncated: bool


class IsaDisasmResult(Result):
    file: str
    tool: str
    kernels: list[KernelDisasm]

    def render_text(self) -> str:
        out = []
        for k in self.kernels:
            out.append(f"== {k.kernel} ({k.arch}, {k.entry})")
            out += ["  " + ln for ln in k.lines]
            if k.truncated:
                out.append("  ... (truncated; raise --max-lines)")
        return "\n".join(out) or "no kernels"


class IsaMixResult(Result):
    file: str
    kernels: list[KernelMixModel]

    def render_text(self) -> str:
        out = []
        for m in self.kernels:
            fams = ", ".join(f"{k}={v}" for k, v in sorted(m.families.items(), key=lambda kv: -kv[1]))
            out.append(f"{m.kernel} ({m.arch}): {m.instructions} instr; {fams}")
            if m.global_load_bits:
                out.append(
                    "   global loads by width: "
                    + ", ".join(f"{b}-bit x{n}" for b, n in sorted(m.global_load_bits.items()))
                )
            if m.global_store_bits:
                out.append(
                    "   global stores by width: "
                    + ", ".join(f"{b}-bit x{n}" for b, n in sorted(m.global_store_bits.items()))
                )
            top = ", ".join(f"{k}={v}" for k, v in list(m.top_opcodes.items())[:8])
            out.append(f"   top opcodes: {top}")
            if m.issued_instructions is not None:
                pipes = ", ".join(
                    f"{k}={v}" for k, v in sorted(m.pipe_classes.items(), key=lambda kv: -kv[1])
                )
                loops = (
                    f"; {m.backward_branches} loop branch(es): per-warp counts are a lower bound"
                    if m.backward_branches
                    else "; straight-line code"
                )
                out.append(
                    f"   issue: {m.issued_instructions} instr per warp pass "
                    f"({pipes or 'no classed pipe'}){loops}"
                )
        return "\n".join(out) or "no kernels"


class IsaOccupancyRequest(IsaFileRequest):
    block_size: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="threads per block (default: the kernel's required/max block size, else 256)",
    )
    dynamic_shared_bytes: int = Field(0, ge=0, description="dynamic shared memory / LDS bytes per block")
    target_arch: str | None = Field(
        None, description="evaluate on this arch instead of the code object's (e.g. sm_86 for an sm_80 cubin)"
    )


class IsaOccupancyResult(Result):
    file: str
    results: list[OccupancyModel]
    note: str = "Occupancy from the vendor allocation rules (a model), not a measured achieved occupancy."

    def render_text(self) -> str:
        out = []
        for o in self.results:
            per = f", {o.waves_per_simd} waves/SIMD" if o.waves_per_simd is not None else ""
            out.append(
                f"{o.kernel} on {o.arch}, block {o.block_size}: {o.resident_blocks} blocks, "
                f"{o.resident_warps}/{o.max_warps} {o.per_unit} ({o.occupancy_pct}%){per}; "
                f"limiter {o.limiter}; limits {o.limits}"
            )
            for s in o.next_step:
                out.append(f"   next: {s.change} -> {s.gives}")
        out.append(self.note)
        return "\n".join(out)


class IsaFitRequest(IsaOccupancyRequest):
    disassemble: bool = Field(
        True, description="use the disassembler (when installed) for mix-based findings"
    )


class IsaFitResult(Result):
    file: str
    reports: list[FitReport]
    note: str = "ISA-fit heuristic from the code object, not a measured occupancy or profile."

    def render_text(self) -> str:
        return "\n\n".join(r.text for r in self.reports) + f"\n\n{self.note}"
