"""Result sub-models shared by the occupancy, mix and fit capabilities (pydantic only)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OccupancyStepModel(BaseModel):
    limiter: str
    change: str = Field(description="what would gain the next step")
    gives: str


class OccupancyModel(BaseModel):
    """Resident work per SM/CU/WGP from the vendor allocation rules (`isa.occupancy`, `isa.occupancy_amd`)."""

    kernel: str
    arch: str
    block_size: int
    dynamic_shared_bytes: int = 0
    unit: str = Field(
        "SM",
        description="what resident_blocks/resident_warps/max_warps count per: SM (NVIDIA), CU (CDNA, or RDNA "
        "in CU mode) or WGP (RDNA in WGP mode, LLVM's default: two CUs, four SIMD32s, both CUs' LDS)",
    )
    resident_blocks: int = Field(description="blocks (workgroups) per unit")
    resident_warps: int = Field(description="warps (waves) per unit")
    max_warps: int = Field(description="architectural maximum warps (waves) per unit")
    occupancy_pct: float
    waves_per_simd: int | None = Field(
        None,
        description="AMD: waves per SIMD by LLVM's occupancy rules, the figure of the compiler's "
        "'Occupancy [waves/SIMD]' remark (for the kernel's max flat workgroup size; LDS rounded up to the "
        "hardware's allocation block, which clang 19 skips: a note says when that differs); resident_warps "
        "is workgroup-granular for the launch block",
    )
    limits: dict[str, int] = Field(description="blocks (workgroups) per unit allowed by each resource")
    limiter: str
    next_step: list[OccupancyStepModel] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)

    @property
    def per_unit(self) -> str:
        """How resident_warps/max_warps count: 'warps/SM' on NVIDIA, 'waves/CU' or 'waves/WGP' on AMD."""
        return f"{'warps' if self.waves_per_simd is None else 'waves'}/{self.unit}"

    notes: list[str] = Field(default_factory=list)


class KernelMixModel(BaseModel):
    kernel: str
    arch: str
    entry: str
    instructions: int
    families: dict[str, int]
    global_load_bits: dict[int, int] = Field(default_factory=dict)
    global_store_bits: dict[int, int] = Field(default_factory=dict)
    shared_bits: dict[int, int] = Field(default_factory=dict)
    top_opcodes: dict[str, int] = Field(default_factory=dict)
    issued_instructions: int | None = Field(
        default=None,
        description="instructions a warp (wave) can issue: NVIDIA NOP padding and the closing self-loop left "
        "out; AMD scheduler-internal instructions (s_nop, s_waitcnt, s_barrier, ...) left out",
    )
    pipe_classes: dict[str, int] = Field(
        default_factory=dict,
        description="static instructions per issue-floor pipe class (isa.disasm.SASS_PIPES; AMD: "
        "isa.disasm.AMD_PIPES, valu/trans/salu/lds/vmem/branch/matrix)",
    )
    wavefront_size: int | None = Field(
        default=None, description="AMD: the kernel's wave size (32 or 64) from the code object; NVIDIA: None"
    )
    backward_branches: int | None = Field(
        default=None,
        description="branches to a label above them: loops, which make static counts a lower bound",
    )
    forward_branches: int | None = Field(
        default=None,
        description="predicated branches down: code a warp may skip, which static counts still hold",
    )


class FitReport(BaseModel):
    kernel: str
    arch: str
    text: str
    left_on_table: list[str]
    occupancy: OccupancyModel | None = None
    mix: KernelMixModel | None = None
    not_checked: list[str] = Field(
        default_factory=list,
        description="Checks of `left_on_table` that could not run (no disassembler: load widths, matrix "
        "units), each with the fix; empty when every check ran.",
    )
