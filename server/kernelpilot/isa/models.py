"""Pydantic models of the ISA readers: code-object entries, per-kernel resources, mix, occupancy, fit."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

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
    workgroup_processor_mode: bool | None = Field(
        None, description="AMD gfx10+: True in WGP mode (LLVM's default), False in CU mode (-mcumode)"
    )
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


_Builder = Callable[[list[dict[str, Any]]], list[KernelResources]]
_IMMUTABLE = (type(None), bool, int, float, str, tuple)


def kernels_from_values(values: list[dict[str, Any]]) -> list[KernelResources]:
    """`KernelResources` from field values that kernelpilot's own readers produced: every dict has the same
    keys, and values of the declared types, by construction (the readers are typed code, not user input).
    The dicts are the caller's to give away: with every field given, in field order, each becomes a model's
    `__dict__` as it is.

    Large libraries hold ~10^5 kernels, and validating each one costs more than reading it. So the models
    are built the way `model_construct` builds them (the values as `__dict__`, in field order, the given keys
    as fields-set), which is ~2x quicker than validation. Before the first use for a key set, one instance
    is built both ways and compared slot by slot; if they differ in anything (another pydantic's internals),
    validation is used from then on."""
    if not values:
        return []
    build = _builder(frozenset(values[0]))
    if build is None or not _agrees(build, values[0]):
        return _adapter().validate_python(values)
    return build(values)


@functools.cache
def _adapter() -> TypeAdapter[list[KernelResources]]:
    return TypeAdapter(list[KernelResources])


@functools.cache
def _builder(keys: frozenset[str]) -> _Builder | None:
    """A constructor for dicts with exactly `keys`, or None when the fields not given have no immutable
    default to share between instances (then only validation is right)."""
    fields = KernelResources.model_fields
    if not keys <= fields.keys():
        return None
    template: dict[str, Any] = {}
    for name, info in fields.items():
        if name in keys:
            template[name] = None  # placeholder: keeps the field order when the values are laid over it
        elif info.default_factory is None and isinstance(info.default, _IMMUTABLE):
            template[name] = info.default
        else:
            return None
    cls = KernelResources
    new = object.__new__
    setattr_ = object.__setattr__
    complete = len(template) == len(keys)  # every field given: the caller's dict becomes the __dict__

    def build(values: list[dict[str, Any]]) -> list[KernelResources]:
        out: list[KernelResources] = []
        append = out.append
        for v in values:
            m = new(cls)
            if complete:
                d = v
            else:
                d = template.copy()
                d.update(v)
            setattr_(m, "__dict__", d)
            setattr_(m, "__pydantic_fields_set__", set(keys))
            setattr_(m, "__pydantic_extra__", None)
            setattr_(m, "__pydantic_private__", None)
            append(m)
        return out

    return build


_checked: dict[_Builder, bool] = {}


def _agrees(build: _Builder, sample: dict[str, Any]) -> bool:
    ok = _checked.get(build)
    if ok is None:
        fast = build([sample])[0]
        slow = _adapter().validate_python([sample])[0]
        ok = _checked[build] = (
            list(fast.__dict__.items()) == list(slow.__dict__.items())
            and fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
            and fast.__pydantic_extra__ == slow.__pydantic_extra__
            and fast.__pydantic_private__ == slow.__pydantic_private__
            and fast.model_dump_json() == slow.model_dump_json()
        )
    return ok
