"""Pydantic models of the ISA readers: code-object entries, per-kernel resources, mix, occupancy, fit."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Vendor = Literal["nvidia", "amd"]


class KernelResources(BaseModel):
    """Resources of one kernel as recorded in its code object (not measured)."""

    kernel_id: str = Field("", description="stable id '<entry>::<name>' that profile rows can reference")
    name: str = Field(description="symbol name as in the code object (mangled for C++)")
    demangled: str = Field(description='demangled name (same as name for extern "C" kernels)')
    vendor: Vendor
    arch: str = Field(description="target, e.g. sm_90 or gfx942 (AMD: without feature suffixes)")
    # (tuples, not lists: 10^4-10^5 of these models are built per large library, and empty tuples are one
    # shared object the cyclic collector never walks, where each empty list would be one more it tracks)
    target_features: tuple[str, ...] = Field((), description="AMD: xnack+/-, sramecc+/-")
    entry: str = Field(description="which code object inside the file this kernel came from")
    is_entry: bool = Field(True, description="False for non-kernel device functions listed by the reader")
    registers: int | None = Field(None, description="NVIDIA: registers per thread; AMD: arch VGPRs per lane")
    agprs: int | None = Field(None, description="AMD accumulation VGPRs per lane (gfx90a/gfx94x)")
    sgprs: int | None = Field(None, description="AMD scalar registers per wave")
    max_registers: int | None = Field(
        None, description="NVIDIA register cap (maxrregcount/__maxnreg__), 255=none"
    )
    static_shared_bytes: int | None = Field(
        None, description="static shared/LDS bytes per block (no reserve)"
    )
    shared_section_bytes: int | None = Field(
        None, description="NVIDIA: size of .nv.shared.<kernel> (cuobjdump's SHARED; includes system reserve)"
    )
    dynamic_lds: bool | None = Field(None, description="AMD: kernel uses dynamically sized LDS")
    stack_frame_bytes: int | None = Field(None, description="NVIDIA: stack frame per thread; AMD: scratch")
    min_stack_bytes: int | None = None
    spill_store_bytes: int | None = Field(
        None, description="NVIDIA: from a ptxas -v log when given; else None"
    )
    spill_load_bytes: int | None = None
    sgpr_spills: int | None = Field(None, description="AMD: SGPRs spilled (count)")
    vgpr_spills: int | None = Field(None, description="AMD: VGPRs spilled (count)")
    spills_recorded: bool = Field(False, description="True when spill figures come from the code object/log")
    dynamic_stack: bool | None = None
    max_threads_per_block: int | None = Field(None, description="launch bound / max flat workgroup size")
    required_block_size: list[int] | None = Field(None, description="required block size (reqntid/reqd)")
    constant_banks: dict[str, int] = Field(
        default_factory=dict, description="bank -> bytes (bank 0 = params)"
    )
    param_bytes: int | None = Field(None, description="kernel parameter / kernarg bytes")
    barriers: int | None = Field(None, description="named barriers used (NVIDIA)")
    uses_wmma: bool | None = None
    wavefront_size: int | None = Field(None, description="AMD wave size (32/64); NVIDIA warps are 32")
    cluster_dims: list[int] | None = None
    notes: tuple[str, ...] = ()


class CodeObjectEntry(BaseModel):
    """One code object found in a file (the file itself, or an entry of a fatbin / bundle)."""

    index: int
    label: str = Field(description="stable name used in kernel 'entry' fields and the manifest")
    kind: Literal["cubin", "ptx", "hsaco", "host", "other"]
    vendor: Vendor | None = None
    arch: str | None = None
    container: str = Field(description="file, fatbin, offload-bundle, compressed-offload-bundle")
    offset: int = Field(description="byte offset of the payload in the file (container-relative if nested)")
    size_bytes: int
    compressed: str | None = Field(None, description="lz4 / zstd / zlib when the payload was compressed")
    decompressed: bool = True
    kernel_count: int | None = None
    note: str = ""
