"""Request/result models of the roofline capability (cheap to import; the math lives in `roofline.core`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.models import Request, Result
from kernelpilot.wiki.models import WIKI_FIELD_DESCRIPTION, CitedValue

OpKind = Literal["gemm", "bmm", "elementwise", "reduction", "softmax", "layernorm", "rmsnorm", "attention"]


class RooflineRequest(Request):
    gpu: str = Field(description="GPU name, wiki id or alias (H100, h100-sxm5, MI300X, ...)")
    op: OpKind | None = Field(
        default=None,
        description=(
            "Operation to count FLOPs/bytes for: gemm (m,n,k), bmm (batch,m,n,k), elementwise (numel, "
            "inputs, outputs), reduction/softmax/layernorm/rmsnorm (rows, cols), attention (batch, heads, "
            "seq_q, seq_k, head_dim, causal). Omit and give flops + bytes_moved directly instead"
        ),
    )
    dtype: str = Field(
        default="bf16", description="input dtype: fp64, fp32, tf32, fp16, bf16, fp8, int8, fp6, fp4"
    )
    out_dtype: str | None = Field(default=None, description="output dtype (default: same as dtype)")
    m: int | None = Field(default=None, description="GEMM rows of A and C")
    n: int | None = Field(default=None, description="GEMM columns of B and C")
    k: int | None = Field(default=None, description="GEMM reduction dimension")
    batch: int | None = Field(default=None, description="batch count (bmm, attention); default 1")
    accumulate: bool = Field(default=False, description="GEMM reads C too (C = A@B + C, beta != 0)")
    numel: int | None = Field(
        default=None, description="elements per tensor (elementwise; reduction of one row)"
    )
    inputs: int = Field(default=2, description="elementwise: input tensors read")
    outputs: int = Field(default=1, description="elementwise: output tensors written")
    flops_per_element: float = Field(default=1.0, description="elementwise: FLOPs per output element")
    rows: int | None = Field(
        default=None, description="rows (reduction/softmax/layernorm/rmsnorm, reduced along cols)"
    )
    cols: int | None = Field(default=None, description="columns = length of each reduced row")
    heads: int | None = Field(default=None, description="attention: query heads")
    kv_heads: int | None = Field(
        default=None, description="attention: key/value heads (GQA/MQA; default = heads)"
    )
    seq_q: int | None = Field(default=None, description="attention: query sequence length")
    seq_k: int | None = Field(
        default=None, description="attention: key/value sequence length (default = seq_q)"
    )
    head_dim: int | None = Field(default=None, description="attention: head dimension")
    causal: bool = Field(default=False, description="attention: causal mask (bottom-right aligned)")
    flops: float | None = Field(default=None, description="FLOPs of the kernel, when given directly (no op)")
    bytes_moved: float | None = Field(
        default=None, description="DRAM bytes read+written, when given directly"
    )
    unit: Literal["auto", "tensor", "vector"] = Field(
        default="auto",
        description="compute unit whose peak applies: auto = tensor for gemm/bmm/attention, vector otherwise",
    )
    allow_tf32: bool = Field(
        default=False, description="fp32 matrix ops may use TF32 tensor cores (tf32 peak)"
    )
    sparse: bool = Field(
        default=False, description="use the 2:4 sparse tensor peak (only if the kernel is sparse)"
    )
    target_fraction: float = Field(default=0.9, description="target fraction of the roofline, 0 < f <= 1")
    basis: Literal["spec", "measured"] = Field(
        default="spec",
        description="ceilings for floor/targets: datasheet specs, or the wiki's measured lines (## Measured)",
    )
    measured_time_us: float | None = Field(default=None, description="measured kernel time (µs) -> % of peak")
    measured_bytes: float | None = Field(default=None, description="measured DRAM bytes (e.g. from ncu)")
    measured_flops: float | None = Field(default=None, description="measured FLOPs (e.g. from ncu)")
    svg: str | None = Field(default=None, description="write the SVG roofline chart to this file")
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)


Bound = Literal["compute", "memory"]
CEILING_SCALE = {"TB/s": 1e12, "GB/s": 1e9, "TFLOP/s": 1e12, "TOP/s": 1e12}


class Ceiling(BaseModel):
    """A roof with its citation: a wiki spec line, a `## Measured` line or a profiler's own peak."""

    metric: str = Field(description="wiki key, e.g. measured_copy_bandwidth_tb_s or memory_bandwidth_tb_s")
    value: float
    unit: str = Field(description="TB/s, GB/s, TFLOP/s or TOP/s")
    citation: str = Field(description="'<metric>: <value> <unit> <- <path>:L<line>' or the profiler's name")
    measured: bool = Field(description="true for a ceiling measured on a device (`## Measured`)")

    def per_s(self) -> float:
        scale = CEILING_SCALE.get(self.unit)
        if scale is None or not self.value > 0:
            raise InvalidArgumentError(
                f"ceiling {self.citation} has unit {self.unit!r} / value {self.value}",
                "a ceiling is a positive TB/s, GB/s, TFLOP/s or TOP/s figure",
            )
        return self.value * scale


class StopVerdict(BaseModel):
    """MET / NOT MET against the attainable target of the binding roof, with the numbers."""

    bound: Bound
    status: Literal["MET", "NOT MET", "UNKNOWN"] = Field(
        description="UNKNOWN when no measured time was given (the target still stands)"
    )
    lever: Literal["stop_or_fuse"] | None = Field(description="stop_or_fuse exactly when status is MET")
    target_fraction: float
    ceiling: Ceiling = Field(description="the roof the target uses: measured when the wiki has one")
    spec_ceiling: Ceiling | None = Field(description="the datasheet roof, shown beside (never mixed in)")
    work: float = Field(description="bytes (memory bound) or FLOPs (compute bound) of one launch")
    target_time_us: float = Field(description="work / ceiling / target_fraction")
    spec_target_time_us: float | None = Field(description="the same target on the spec ceiling")
    measured_time_us: float | None = None
    achieved: float | None = Field(default=None, description="work / measured time, in the ceiling's unit")
    pct_of_ceiling: float | None = Field(default=None, description="achieved / ceiling, in %")
    pct_of_spec: float | None = Field(default=None, description="achieved / spec ceiling, in %")
    headroom_pct: float | None = Field(
        default=None, description="time a kernel at 100 % of the ceiling would save: 100 - pct_of_ceiling"
    )
    text: str = Field(description="one line: the verdict with its numbers")

    def brief(self) -> str:
        """The verdict in a few words, for compact text views (the numbers are all in `text`)."""
        kind = "measured" if self.ceiling.measured else "spec"
        if self.pct_of_ceiling is None:
            return f"stop verdict {self.status}: target ≤ {self.target_time_us:.4g} µs"
        return (
            f"stop {self.status}: {self.pct_of_ceiling:.1f}% of {kind} ceiling (≥{self.target_fraction:.0%})"
        )


class CeilingComparison(BaseModel):
    """A datasheet peak next to the measured ceiling for the same resource."""

    resource: str
    spec: CitedValue
    measured: CitedValue
    ratio: float = Field(description="measured / spec")


class Achieved(BaseModel):
    time_us: float
    tflops: float
    tb_s: float
    pct_of_compute_peak: float
    pct_of_memory_peak: float
    pct_of_roofline: float = Field(description="time floor / measured time, in %")


class RooflineResult(Result):
    gpu_id: str
    op: str = Field(description="what was counted")
    formula: str = Field(description="the FLOP and byte counting formulas used")
    flops: float
    bytes: float
    arithmetic_intensity: float = Field(description="FLOP per byte")
    compute_peak: CitedValue
    memory_peak: CitedValue
    peak_choice: str = Field(description="which peak applies and why")
    basis: str
    ridge_point: float = Field(description="FLOP/byte where the roofs meet")
    bound: Literal["compute", "memory"]
    compute_time_us: float
    memory_time_us: float
    time_floor_us: float
    target_fraction: float
    target_time_us: float = Field(description="the stop verdict's target time (attainable ceiling)")
    stop_conditions: list[str]
    stop: StopVerdict = Field(
        description="the one stop verdict (kernelpilot.roofline.stop): the binding roof's target on the "
        "measured ceiling when the wiki has one, MET / NOT MET with the numbers, stop_or_fuse exactly "
        "when MET"
    )
    comparisons: list[CeilingComparison] = Field(default_factory=list)
    achieved: Achieved | None = None
    citations: list[str]
    notes: list[str] = Field(default_factory=list)
    ascii_chart: str
    svg: str
    svg_path: str | None = None

    def render_text(self) -> str:
        out = [
            f"roofline: {self.op} on {self.gpu_id}",
            f"  counting: {self.formula}",
            f"  FLOPs = {self.flops:.6g}   bytes = {self.bytes:.6g}   arithmetic intensity = "
            f"{self.arithmetic_intensity:.4g} FLOP/B",
            f"  peak: {self.peak_choice}",
            f"  ridge point = {self.ridge_point:.4g} FLOP/B  ->  {self.bound.upper()}-BOUND "
            f"({self.basis} ceilings)",
            f"  compute time {self.compute_time_us:.4g} µs, memory time {self.memory_time_us:.4g} µs, "
            f"floor {self.time_floor_us:.4g} µs",
        ]
        if self.comparisons:
            out.append("spec vs measured:")
            for c in self.comparisons:
                out.append(f"  {c.resource}: measured/spec = {c.ratio:.1%}")
                out.append(f"    spec:     {c.spec.citation()}")
                out.append(f"    measured: {c.measured.citation()}")
        if self.achieved:
            a = self.achieved
            out.append(
                f"achieved: {a.time_us:.4g} µs = {a.tflops:.4g} TFLOP/s "
                f"({a.pct_of_compute_peak:.1f}% of compute "
                f"peak), {a.tb_s:.4g} TB/s ({a.pct_of_memory_peak:.1f}% of bandwidth), "
                f"{a.pct_of_roofline:.1f}% of roofline"
            )
        out.append("## Stop Conditions")
        out.extend(f"- {s}" for s in self.stop_conditions)
        out.append("citations:")
        out.extend(f"  {c}" for c in self.citations)
        out.extend(f"note: {n}" for n in self.notes)
        out.append(self.ascii_chart)
        if self.svg_path:
            out.append(f"SVG chart written to {self.svg_path}")
        return "\n".join(out)
