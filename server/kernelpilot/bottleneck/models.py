"""Models of `classify_bottleneck` (BottleneckVerdict field names are fixed: `experiments` stores verdicts and
`tests/bottleneck/test_bottleneck_classify.py::test_contract_field_names` pins them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelpilot.foundation.models import Request, Result
from kernelpilot.foundation.text import clip
from kernelpilot.foundation.validation import JsonText as JsonText  # re-exported for suggest.models
from kernelpilot.roofline.models import StopVerdict
from kernelpilot.wiki.models import WIKI_FIELD_DESCRIPTION

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


class Cause(BaseModel):
    """One firing root-cause rule: what was measured, how much time fixing it could save, which levers."""

    model_config = ConfigDict(extra="forbid")

    rule: str = Field(description="Rule name (kernelpilot.bottleneck.rules), e.g. uncoalesced_global_access.")
    title: str
    quantity: str = Field(description="The measured excess in words, with its numbers.")
    value: float = Field(description="The headline number of the quantity.")
    unit: str
    gain_pct: float | None = Field(
        description="Estimated share of the kernel time a fix could remove (upper bound); None = not "
        "measurable from this input."
    )
    gain_formula: str = Field(description="How gain_pct was computed, with the measured numbers.")
    levers: list[str] = Field(description="Lever ids (kernelpilot suggest), best first.")
    at_roof: bool = Field(False, description="True when the rule says the kernel is at a roofline.")
    evidence: list[Evidence]
    source: str = Field(description="Document that explains the rule (URL and section).")


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
    causes: list[Cause] = Field(
        default_factory=list, description="Firing root-cause rules, largest estimated gain first."
    )
    ruled_out: list[str] = Field(
        default_factory=list,
        description="Rules evaluated on this input that did not fire ('rule: why'); their levers are "
        "contradicted by the evidence.",
    )
    stop: StopVerdict | None = Field(
        default=None,
        description="The memory stop verdict (kernelpilot.roofline.stop) of this launch: DRAM bytes / "
        "duration against 90% of the measured copy ceiling (peaks_json's memory peak, else the wiki's line "
        "for the profiled GPU); MET exactly when `dram_at_roof` fires and `suggest` offers stop_or_fuse.",
    )


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
    profile_json: JsonText | None = Field(
        default=None,
        description="Instead of profile_path: a profile_parse/profile_run result as inline JSON or the "
        "path of a JSON file (e.g. saved from `kernelpilot profile parse --json`).",
    )
    kernel: str | None = Field(default=None, description="Only kernels whose name contains this text.")
    peaks_json: JsonText | None = Field(
        default=None,
        description="Optional list of cited peaks [{metric, value, unit, citation}] (inline JSON or a JSON "
        "file path) "
        "(memory_bandwidth_tb_s,"
        " *_tflops) used when the profile has no speed-of-light percentages (e.g. rocprofv3).",
    )
    isa_facts_json: JsonText | None = Field(
        default=None,
        description="Optional ISA facts (inline JSON or a JSON file path): a flat object (registers, "
        "spill_bytes, stack_frame_bytes, widest_load_bits, tensor_ops, occupancy_limiter, ...), or the "
        "JSON of `kernelpilot isa fit --json` / `isa resources --json` (a list of both is merged); they "
        "feed the root-cause rules and are quoted as evidence.",
    )
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)
    att_dir: str | None = Field(
        default=None,
        description="AMD: a rocprofv3 thread-trace (ATT) dispatch folder; adds a verdict from its stall "
        "taxonomy (alone, or with a profile).",
    )


class ClassifyResult(Result):
    verdicts: list[BottleneckVerdict]
    warnings: list[str] = Field(default_factory=list)

    def render_text(self) -> str:
        """Compact view (causes first, a few evidence lines); every field is in --json."""
        out: list[str] = []
        for v in self.verdicts:
            out.extend(_verdict_text(v))
        out.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(out)


TEXT_CAUSES = 3
TEXT_EVIDENCE = 4


def _val(v: float | str) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _verdict_text(v: BottleneckVerdict) -> list[str]:
    lvl = f" ({v.memory_level})" if v.memory_level else ""
    out = [f"{v.kernel}: {v.verdict}{lvl}  confidence {v.confidence:.2f} — {clip(v.summary, 90)}"]
    if v.causes:
        out.append("causes, largest estimated gain first:")
    for i, c in enumerate(v.causes[:TEXT_CAUSES], 1):
        gain = "gain not measured" if c.gain_pct is None else f"~{c.gain_pct:.0f}% of time"
        out.append(f" {i}. {c.rule} [{gain}]: {clip(c.quantity, 120)}")
        out.append(f"    {clip(c.gain_formula, 150)}; levers: {', '.join(c.levers)}")
    if not v.causes:
        for e in v.evidence[:TEXT_EVIDENCE]:
            out.append(f"  - {e.metric} = {_val(e.value)}  [{e.threshold}]")
    more = len(v.evidence) + max(0, len(v.causes) - TEXT_CAUSES)
    out.append(f"  {len(v.ruled_out)} rules ruled out; {more} evidence lines and all sources in --json")
    out.extend(f"  next: {clip(m, 120)}" for m in v.next_measurements[:2])
    if v.missing:
        out.append("  missing: " + clip(", ".join(v.missing), 200))
    return out
