"""The ISA Fit View: a compact text picture of what a kernel uses against what its architecture offers,
and a short "left on table" list. An ISA-fit heuristic from the code object, not a measurement."""

from __future__ import annotations

import re

from kernelpilot.isa.errors import UnknownArchError
from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy import NVIDIA_TABLE, cc_of
from kernelpilot.isa.occupancy_amd import AMD_TABLE
from kernelpilot.isa.occupancy_models import FitReport, KernelMixModel, OccupancyModel

GEMM_NAME = re.compile(r"gemm|matmul|mma|conv|attn|attention|dot", re.I)
FMA_OPS = re.compile(r"^(FFMA|HFMA2|DFMA|v_fma|v_fmac|v_pk_fma|v_mac)", re.I)


def _matrix_units(arch: str) -> str:
    if arch.startswith("gfx"):
        row = AMD_TABLE.get(arch)
        return row.matrix_units if row else "unknown"
    try:
        row_n = NVIDIA_TABLE.get(cc_of(arch))
    except UnknownArchError:  # an arch the table does not know: say so in the view
        row_n = None
    return row_n.matrix_units if row_n else "unknown"


def _widest(bits: dict[int, int]) -> str:
    if not bits:
        return "none"
    w = max(bits)
    total = sum(bits.values())
    return f"{w}-bit ({total} op(s): " + ", ".join(f"{b}b x{n}" for b, n in sorted(bits.items())) + ")"


def _resource_lines(k: KernelResources, occ: OccupancyModel, lines: list[str], left: list[str]) -> None:
    """Registers, shared memory/LDS and occupancy lines; occupancy limiters go to `left`."""
    if k.vendor == "nvidia":
        cap = f", cap {k.max_registers}" if k.max_registers and k.max_registers < 255 else ""
        lines.append(
            f"  registers  {k.registers}/thread{cap}; register limit {occ.limits.get('registers', '-')} "
            f"blocks of {occ.block_size}"
        )
        lines.append(
            f"  shared     {k.static_shared_bytes} B static + {occ.dynamic_shared_bytes} B dynamic per block;"
            f" limit {occ.limits.get('shared_memory', 'none')} blocks"
        )
    else:
        lines.append(
            f"  registers  VGPR {k.registers} AGPR {k.agprs} SGPR {k.sgprs} (wave{k.wavefront_size}); "
            f"VGPR limit {occ.limits.get('vgprs', '-')} workgroups"
        )
        lines.append(
            f"  LDS        {k.static_shared_bytes} B static + {occ.dynamic_shared_bytes} B dynamic; "
            f"limit {occ.limits.get('lds', 'none')} workgroups"
        )
    per = f", {occ.waves_per_simd} waves/SIMD" if occ.waves_per_simd is not None else ""
    lines.append(
        f"  occupancy  {occ.resident_blocks} blocks, {occ.resident_warps}/{occ.max_warps} {occ.per_unit} "
        f"({occ.occupancy_pct}%){per}; limiter {occ.limiter}"
    )
    for s in occ.next_step:
        if s.limiter != "warps":
            lines.append(f"             next: {s.change} -> {s.gives}")
            left.append(f"occupancy limited by {s.limiter}: {s.change} -> {s.gives}")


def _mix_lines(
    k: KernelResources, mix: KernelMixModel | None, mix_note: str, lines: list[str], left: list[str]
) -> None:
    """Matrix-unit use and load/store widths from the disassembly, when there is one."""
    avail = _matrix_units(k.arch)
    if mix is not None:
        mm = mix.families.get("matrix", 0)
        lines.append(f"  matrix     {mm} matrix op(s) used; available on {k.arch}: {avail}")
        lines.append(f"  loads      widest global load {_widest(mix.global_load_bits)}")
        lines.append(f"  stores     widest global store {_widest(mix.global_store_bits)}")
        fma = sum(v for op, v in mix.top_opcodes.items() if FMA_OPS.match(op))
        if (
            mm == 0
            and avail not in ("unknown",)
            and not avail.startswith("none")
            and (
                GEMM_NAME.search(k.demangled)
                or (mix.families.get("shared", 0) > 0 and fma * 4 >= mix.instructions)
            )
        ):
            left.append(f"matrix units idle on a GEMM-shaped kernel ({avail} available, 0 matrix ops)")
        small = sum(n for b, n in mix.global_load_bits.items() if b <= 32)
        if small and max(mix.global_load_bits) <= 32:
            left.append(
                f"scalar {max(mix.global_load_bits) // 8}-byte global loads ({small} of them) where 16-byte "
                "vector loads are possible (float4 / int4 / dwordx4) if data is aligned"
            )
        loc = mix.families.get("local", 0)
        if loc:
            lines.append(f"  local      {loc} local/scratch memory instruction(s)")
    else:
        lines.append(
            f"  matrix     (no disassembly{': ' + mix_note if mix_note else ''}); available: {avail}"
        )


def _not_checked(k: KernelResources, mix: KernelMixModel | None, mix_fix: str) -> list[str]:
    """The mix-based checks of `_mix_lines` that could not run, each with the fix, so a view without a
    disassembler never reads as "nothing left" (issue 42: the default install lacked nvdisasm)."""
    if mix is not None:
        return []
    fix = mix_fix or (
        "pip install nvidia-cuda-nvdisasm (or set KERNELPILOT_NVDISASM)"
        if k.vendor == "nvidia"
        else "set KERNELPILOT_LLVM_OBJDUMP to an llvm-objdump that knows " + k.arch
    )
    why = "not checked (no disassembly); fix: " + fix
    return [
        f"vector width of global loads (scalar loads where 16-byte vector loads fit): {why}",
        f"matrix-unit use (idle matrix units on a GEMM-shaped kernel): {why}",
    ]


def _spill_lines(k: KernelResources, lines: list[str], left: list[str]) -> None:
    """Spills and stack/scratch use, per vendor."""
    if k.vendor == "nvidia":
        if k.spills_recorded:
            sp = f"{k.spill_store_bytes} B stores / {k.spill_load_bytes} B loads per thread"
            lines.append(f"  spills     {sp}; stack frame {k.stack_frame_bytes} B")
            if (k.spill_store_bytes or 0) + (k.spill_load_bytes or 0) > 0:
                left.append(
                    f"spills: {k.spill_store_bytes} bytes/thread stored, {k.spill_load_bytes} loaded "
                    "(raise the register cap or cut live values)"
                )
        else:
            capped = k.max_registers is not None and k.max_registers < 255 and k.registers == k.max_registers
            lines.append(f"  spills     not recorded in the cubin; stack frame {k.stack_frame_bytes} B")
            if capped and (k.stack_frame_bytes or 0) > 0:
                left.append(
                    f"likely spills: register cap {k.max_registers} reached with a "
                    f"{k.stack_frame_bytes}-byte stack frame (pass --ptxas-log for exact spill bytes)"
                )
            elif (k.stack_frame_bytes or 0) > 0:
                left.append(
                    f"local memory: {k.stack_frame_bytes}-byte stack frame per thread (local arrays or "
                    "spills; index arrays with compile-time constants to keep them in registers)"
                )
    else:
        sv, ss = k.vgpr_spills or 0, k.sgpr_spills or 0
        lines.append(f"  spills     VGPR {sv}, SGPR {ss}; scratch {k.stack_frame_bytes} B/lane")
        if sv or ss:
            left.append(f"spills: {sv} VGPRs and {ss} SGPRs spilled to scratch")
        elif (k.stack_frame_bytes or 0) > 0:
            left.append(
                f"scratch: {k.stack_frame_bytes} bytes/lane of private memory (dynamically indexed arrays?)"
            )


def fit_report(
    k: KernelResources, occ: OccupancyModel, mix: KernelMixModel | None, mix_note: str = "", mix_fix: str = ""
) -> FitReport:
    """The view of one kernel; `mix_note`/`mix_fix` say why there is no instruction mix and how to get one."""
    left: list[str] = []
    lines = [
        f"ISA Fit View: {k.demangled} [{k.arch}, {k.entry}]",
        "  (ISA-fit heuristic from the code object; not a measured occupancy)",
    ]
    _resource_lines(k, occ, lines, left)
    _mix_lines(k, mix, mix_note, lines, left)
    _spill_lines(k, lines, left)
    bar = k.barriers if k.vendor == "nvidia" else (mix.families.get("barrier") if mix else None)
    lines.append(f"  barriers   {bar if bar is not None else 'unknown'}")
    unchecked = _not_checked(k, mix, mix_fix)
    empty = " nothing obvious from the checks that ran" if unchecked else " nothing obvious from the ISA"
    lines.append("  left on table:" + ("" if left else empty))
    lines += [f"   - {x}" for x in left]
    if unchecked:
        lines.append("  not checked:")
        lines += [f"   - {x}" for x in unchecked]
    return FitReport(
        kernel=k.demangled,
        arch=k.arch,
        text="\n".join(lines),
        left_on_table=left,
        occupancy=occ,
        mix=mix,
        not_checked=unchecked,
    )
