"""Capability declarations for `isa` (code objects: resources, disassembly, mix, occupancy, fit view)."""

from kernelpilot.capabilities import Capability
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
)

_FILES = (
    "cubin, fatbin, HSACO (code object v3-v6), clang offload bundle (incl. compressed CCOB), or a host "
    "executable/shared library with embedded device code"
)

CAPABILITIES = [
    Capability(
        tool="isa_list",
        command=("isa", "list"),
        summary="List every code object (cubin, PTX, HSACO) inside a file, with its arch and compression.",
        description=(
            f"List the code objects in a {_FILES}: each embedded cubin/PTX/HSACO with its target arch, "
            "size, compression (lz4/zstd/zlib) and kernel count. Use it first on a binary to see which "
            "archs it carries; then pass --arch to the other isa tools."
        ),
        request=IsaListRequest,
        result=IsaListResult,
        target="kernelpilot.isa.core:isa_list",
        positional=("file",),
    ),
    Capability(
        tool="isa_resources",
        command=("isa", "resources"),
        summary="Per-kernel registers, shared/LDS, stack/scratch, spills, launch bounds from a code object.",
        description=(
            f"Read per-kernel resources from a {_FILES} without a GPU: NVIDIA registers, static shared "
            "memory, stack frame, barriers, constant banks, max threads / required block size; AMD "
            "VGPR/AGPR/SGPR, LDS, scratch, spills, wavefront size, max workgroup size. Filter with "
            "--kernel REGEX and --arch. Give --ptxas-log to add NVIDIA spill bytes. The JSON output is a "
            "manifest profile rows can reference by kernel name + entry."
        ),
        request=IsaResourcesRequest,
        result=IsaResourcesResult,
        target="kernelpilot.isa.core:isa_resources",
        read_only=False,  # writes the JSON manifest when --manifest is given
        positional=("file",),
        short={"kernel": "-k"},
        idempotent=True,
    ),
    Capability(
        tool="isa_disasm",
        command=("isa", "disasm"),
        summary="Disassemble kernels (SASS via nvdisasm, AMDGCN via llvm-objdump).",
        description=(
            "Disassemble the selected kernels of a code object; needs nvdisasm/cuobjdump (NVIDIA) or "
            "llvm-objdump (AMD). Use --kernel to pick one kernel and --max-lines to bound output."
        ),
        request=IsaDisasmRequest,
        result=IsaDisasmResult,
        target="kernelpilot.isa.core:isa_disasm",
        positional=("file",),
        short={"kernel": "-k"},
    ),
    Capability(
        tool="isa_mix",
        command=("isa", "mix"),
        summary="Per-kernel instruction mix in named families (matrix ops, load widths, shared, barriers).",
        description=(
            "Count each kernel's instructions by family: matrix/tensor ops (HMMA, HGMMA, v_mfma, "
            "v_wmma), global loads/stores by width (e.g. LDG.E.128, global_load_dwordx4), shared/LDS "
            "ops, barriers and waits, special-function ops, branches, local/scratch traffic. Needs the "
            "disassembler. Use it to check whether a kernel uses tensor cores or vector loads."
        ),
        request=IsaFileRequest,
        result=IsaMixResult,
        target="kernelpilot.isa.core:isa_mix",
        positional=("file",),
        short={"kernel": "-k"},
    ),
    Capability(
        tool="isa_occupancy",
        command=("isa", "occupancy"),
        summary="Resident blocks/warps per SM (waves per SIMD on AMD), the limiter, and the next step.",
        description=(
            "Model occupancy from the extracted resources with the vendor allocation rules for CC 7.0, "
            "7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0 and gfx90a, gfx942, gfx950, gfx1010, gfx1030, gfx1100, "
            "gfx1101, gfx1102, gfx1151, gfx1200, gfx1201 (AMD: LLVM's rules, the figure of the compiler's "
            "occupancy remark; RDNA per WGP or CU as built): "
            "resident blocks and warps, the limiting resource, and what gains the next step (e.g. 'shed 8 "
            "registers/thread -> 3 blocks/SM'). Give --block-size and --dynamic-shared-bytes as launched; "
            "--target-arch evaluates on another arch. A model, not a measurement."
        ),
        request=IsaOccupancyRequest,
        result=IsaOccupancyResult,
        target="kernelpilot.isa.core:isa_occupancy",
        positional=("file",),
        short={"kernel": "-k"},
    ),
    Capability(
        tool="isa_fit_view",
        command=("isa", "fit"),
        summary="ISA Fit View: registers, shared, occupancy, matrix units, loads, spills, left on table.",
        description=(
            "A compact per-kernel text picture of what the kernel uses against what its arch offers "
            "(registers, shared/LDS, occupancy, matrix units, widest memory op, spills, barriers) and a "
            "short 'left on table' list (idle matrix units on GEMM-shaped code, 4-byte loads where "
            "16-byte are possible, spills). Run it before choosing an optimization; it is an ISA-fit "
            "heuristic, not a profile."
        ),
        request=IsaFitRequest,
        result=IsaFitResult,
        target="kernelpilot.isa.core:isa_fit",
        positional=("file",),
        short={"kernel": "-k"},
    ),
]
