"""Result sub-models shared by the occupancy, mix and fit capabilities (pydantic only)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OccupancyStepModel(BaseModel):
    limiter: str
    change: str
    gives: str


class OccupancyModel(BaseModel):
    kernel: str
    arch: str
    block_size: int
    dynamic_shared_bytes: int = 0
    resident_blocks: int
    resident_warps: int
    max_warps: int
    occupancy_pct: float
    waves_per_simd: int | None = None
    limits: dict[str, int]
    limiter: str
    next_step: list[OccupancyStepModel] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
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


class FitReport(BaseModel):
    kernel: str
    arch: str
    text: str
    left_on_table: list[str]
    occupancy: OccupancyModel | None = None
    mix: KernelMixModel | None = None
