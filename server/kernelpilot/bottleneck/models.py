"""Models of `classify_bottleneck` (contract 3 of the team brief: BottleneckVerdict field names are fixed)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelpilot.models import Request, Result

Verdict = Literal["compute_bound", "memory_bound", "latency_bound", "sync_bound", "unknown"]
MemoryLevel = Literal["dram", "l2", "l1_shared"]


class Evidence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str = Field(
        description="Metric name as in the profiler output (or isa.<fact>, or a peak's metric)."
    )
    value: float | str
    threshold: str = Field(description="The rule the value was compared with, e.g. '>= 60 (%)'.")
    source: str = Field(
        description="Where to check it: file + launch, or a citation '<metric>: v unit <- path:Lnn'."
    )


class BottleneckVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kernel: str
    verdict: Verdict
    memory_level: MemoryLevel | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[Evidence]
    next_measurements: list[str]
    launch_id: int | None = None
    summary: str = ""
    missing: list[str] = Field(default_factory=list)


class CitedPeak(BaseModel):
    """A hardware peak with its citation (e.g. from `kernelpilot spec`): never a bare number."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="Wiki key, e.g. memory_bandwidth_tb_s or bf16_dense_tflops.")
    value: float
    unit: str = Field(description="TB/s, GB/s, TFLOP/s or TOP/s.")
    citation: str = Field(description="'<metric>: <value> <unit> <- <path>:L<line>'.")


class ClassifyRequest(Request):
    profile_path: str | None = Field(
        default=None, description="Profiler output (ncu raw/details CSV, .ncu-rep, rocprofv3 CSV/JSON)."
    )
    profile_json: str | None = Field(
        default=None, description="Instead of a path: a profile_parse/profile_run result as JSON."
    )
    kernel: str | None = Field(default=None, description="Only kernels whose name contains this text.")
    peaks_json: str | None = Field(
        default=None,
        description="Optional JSON list of cited peaks [{metric, value, unit, citation}] "
        "(memory_bandwidth_tb_s,"
        " *_tflops) used when the profile has no speed-of-light percentages (e.g. rocprofv3).",
    )
    isa_facts_json: str | None = Field(
        default=None,
        description="Optional JSON object of ISA facts for the kernel (e.g. registers, spill_bytes, "
        "stack_frame_bytes, barriers) from `kernelpilot isa resources`; quoted as evidence.",
    )
    att_dir: str | None = Field(
        default=None,
        description="AMD: a rocprofv3 thread-trace (ATT) dispatch folder; adds a verdict from its stall "
        "taxonomy (alone, or with a profile).",
    )


class ClassifyResult(Result):
    verdicts: list[BottleneckVerdict]
    warnings: list[str] = Field(default_factory=list)

    def render_text(self) -> str:
        out: list[str] = []
        for v in self.verdicts:
            lvl = f" ({v.memory_level})" if v.memory_level else ""
            out.append(f"{v.kernel}: {v.verdict}{lvl}  confidence {v.confidence:.2f}")
            if v.summary:
                out.append(f"  {v.summary}")
            for e in v.evidence:
                val = f"{e.value:.4g}" if isinstance(e.value, float) else str(e.value)
                out.append(f"  - {e.metric} = {val}  [{e.threshold}]  <- {e.source}")
            for m in v.next_measurements:
                out.append(f"  next: {m}")
            if v.missing:
                out.append("  missing: " + ", ".join(v.missing))
        out.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(out)
