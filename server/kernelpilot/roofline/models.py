"""Request/result models of the roofline capability (cheap to import; the math lives in `roofline.core`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.models import Request, Result
from kernelpilot.wiki.models import WIKI_FIELD_DESCRIPTION, CitedValue

OpKind = Literal[
    "gemm", "bmm", "elementwise", "reduction", "softmax", "layernorm", "rmsnorm", "attention", "topk"
]


class RooflineRequest(Request):
    gpu: str = Field(description="GPU name, wiki id or alias (H100, h100-sxm5, MI300X, ...)")
    op: OpKind | None = Field(
        default=None,
        description=(
            "Operation to count FLOPs/bytes for: gemm (m,n,k), bmm (batch,m,n,k), elementwise (numel, "
            "inputs, outputs), reduction/softmax/layernorm/rmsnorm (rows, cols), attention (batch, heads, "
            "seq_q, seq_k, head_dim, causal), topk (rows, cols, k: selection/gating, values in out_dtype + "
            "int32 ids). Omit and give flops + bytes_moved directly instead (or bytes_moved with --isa)"
        ),
    )
    dtype: str = Field(
        default="bf16", description="input dtype: fp64, fp32, tf32, fp16, bf16, fp8, int8, fp6, fp4"
    )
    out_dtype: str | None = Field(default=None, description="output dtype (default: same as dtype)")
    m: int | None = Field(default=None, description="GEMM rows of A and C")
    n: int | None = Field(default=None, description="GEMM columns of B and C")
    k: int | None = Field(
        default=None, description="GEMM reduction dimension; topk: values selected per row (8 of 128 experts)"
    )
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
    isa: str | None = Field(
        default=None,
        description="code object (cubin, e.g. Triton's cache or cupy's) of the kernel: adds the static "
        "instruction-issue floor (isa mix counts x warps launched); needs grid and block",
    )
    isa_kernel: str | None = Field(default=None, description="--isa: regex picking the kernel in the file")
    isa_arch: str | None = Field(default=None, description="--isa: code object arch (sm_90) in a fatbin")
    grid: list[int] | None = Field(default=None, description="--isa: launch grid in blocks, e.g. [65536]")
    block: list[int] | None = Field(
        default=None, description="--isa: threads per block, e.g. [128] (Triton: num_warps x 32)"
    )
    trip: float = Field(
        default=1.0,
        description="--isa: times each warp runs the counted code (rows per warp of a looped/persistent "
        "kernel); the static count holds a loop body once",
    )
    ncu_csv: str | None = Field(
        default=None,
        description="ncu raw page (`--csv --page raw`, full set) of the kernel: adds the measured issue "
        "floor from smsp__inst_executed.sum and sm__inst_executed_pipe_<pipe>.sum",
    )
    ncu_kernel: str | None = Field(
        default=None, description="--ncu-csv: regex picking the launch (last match)"
    )
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


Bound = Literal["compute", "memory", "issue"]
CEILING_SCALE = {"TB/s": 1e12, "GB/s": 1e9, "TFLOP/s": 1e12, "TOP/s": 1e12, "Ginst/s": 1e9}


class Ceiling(BaseModel):
    """A roof with its citation: a wiki spec line, a `## Measured` line or a profiler's own peak."""

    metric: str = Field(description="wiki key, e.g. measured_copy_bandwidth_tb_s or memory_bandwidth_tb_s")
    value: float
    unit: str = Field(description="TB/s, GB/s, TFLOP/s, TOP/s, or Ginst/s (warp instructions, issue roof)")
    citation: str = Field(description="'<metric>: <value> <unit> <- <path>:L<line>' or the profiler's name")
    measured: bool = Field(description="true for a ceiling measured on a device (`## Measured`)")

    def per_s(self) -> float:
        scale = CEILING_SCALE.get(self.unit)
        if scale is None or not self.value > 0:
            raise InvalidArgumentError(
                f"ceiling {self.citation} has unit {self.unit!r} / value {self.value}",
                "a ceiling is a positive TB/s, GB/s, TFLOP/s, TOP/s or Ginst/s figure",
            )
        return self.value * scale


class BelowFloor(BaseModel):
    """A measured time under a physical floor: impossible, so a measurement or an op description is wrong."""

    measured_time_us: float
    floor_us: float = Field(description="the floor the time is under (spec ceilings: a physical limit)")
    bound: Bound
    check: list[str] = Field(description="which measurement or which op field to check, most likely first")
    message: str = Field(description="one line: IMPOSSIBLE, the numbers and what to check")


class StopVerdict(BaseModel):
    """MET / NOT MET against the attainable target of the binding roof, with the numbers."""

    bound: Bound
    status: Literal["MET", "NOT MET", "UNKNOWN", "IMPOSSIBLE"] = Field(
        description="UNKNOWN when no measured time was given (the target still stands); IMPOSSIBLE when the "
        "measured time is under the physical floor (a timing or op-description error: see below_floor)"
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
    below_floor: BelowFloor | None = Field(
        default=None, description="set exactly when status is IMPOSSIBLE: what to check"
    )
    text: str = Field(description="one line: the verdict with its numbers")
    basis: str = Field(
        default="",
        description="what `achieved` divides: the roofline's counted work / --measured-time-us, or the "
        "profile's DRAM bytes/time, so two percentages of one kernel's ceiling say why they differ",
    )

    def brief(self) -> str:
        """The verdict in a few words, for compact text views (the numbers are all in `text`)."""
        kind = "measured" if self.ceiling.measured else "spec"
        if self.status == "IMPOSSIBLE":
            return f"stop IMPOSSIBLE: measured time under the {self.bound} floor (a timing or op error)"
        if self.pct_of_ceiling is None:
            return f"stop verdict {self.status}: target ≤ {self.target_time_us:.4g} µs"
        of = f"; {self.basis}" if self.basis else ""
        pct = f"{self.pct_of_ceiling:.1f}% of {kind} ceiling"
        return f"stop {self.status}: {pct} (≥{self.target_fraction:.0%}{of})"


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
    pct_of_compute_peak: float | None = Field(description="None when the time is under the floor")
    pct_of_memory_peak: float | None = Field(description="None when the time is under the floor")
    pct_of_roofline: float | None = Field(
        description="time floor / measured time, in %; None when the time is under the floor (impossible)"
    )


class PipeFloor(BaseModel):
    """One pipe's (or the issue slots') share of the issue floor."""

    pipe: str = Field(description="issue (every warp instruction) or a pipe class: fma, alu, shuffle, xu")
    warp_instructions: float
    rate_inst_per_clk_per_sm: float = Field(description="cited rate, warp instructions per clock per SM")
    time_us: float = Field(description="warp_instructions / (rate x sm_count x boost clock)")
    citation: str = Field(description="how the rate is built, each factor a wiki citation")


class IssueFloor(BaseModel):
    """The instruction-issue floor from one source of counts (kernelpilot.roofline.issue)."""

    source: Literal["static", "measured"] = Field(description="static: code object; measured: ncu counters")
    what: str = Field(description="where the counts come from and how they were scaled")
    sm_count: int = Field(description="SMs (NVIDIA) or CUs (AMD: unit CU) the rates are multiplied by")
    unit: Literal["SM", "CU"] = Field(
        default="SM", description="what the rates are per: SM (NVIDIA, warp instructions) or CU (AMD, waves)"
    )
    clock_mhz: float = Field(
        description="cited boost clock: the fastest the SM runs, so the floor is a floor"
    )
    pipes: list[PipeFloor] = Field(description="slowest first")
    binding: str = Field(description="the pipe (or issue) that sets the floor")
    time_us: float
    lower_bound: str | None = Field(
        default=None,
        description="why the static count may differ from what ran: loops (undercount, a lower bound) or "
        "predicated forward branches (code a warp may skip, counted)",
    )
    citations: list[str]


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
    bound: Bound = Field(description="the floor that binds: compute, memory or issue (instruction issue)")
    compute_time_us: float
    memory_time_us: float
    issue_time_us: float | None = Field(
        default=None, description="the issue floor (measured when an ncu page was given, else static)"
    )
    issue: list[IssueFloor] = Field(default_factory=list, description="static and/or measured issue floors")
    time_floor_us: float = Field(description="max of the compute, memory and issue floors")
    below_floor: BelowFloor | None = Field(
        default=None, description="set when measured_time_us is under time_floor_us: impossible"
    )
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
        issue = f", issue time {self.issue_time_us:.4g} µs" if self.issue_time_us is not None else ""
        out = [
            f"roofline: {self.op} on {self.gpu_id}",
            f"  counting: {self.formula}",
            f"  FLOPs = {self.flops:.6g}   bytes = {self.bytes:.6g}   arithmetic intensity = "
            f"{self.arithmetic_intensity:.4g} FLOP/B",
            f"  peak: {self.peak_choice}",
            f"  ridge point = {self.ridge_point:.4g} FLOP/B  ->  {self.bound.upper()}-BOUND "
            f"({self.basis} ceilings)",
            f"  compute time {self.compute_time_us:.4g} µs, memory time {self.memory_time_us:.4g} µs{issue}, "
            f"floor {self.time_floor_us:.4g} µs",
        ]
        out.extend(self._issue_lines())
        if self.comparisons:
            out.append("spec vs measured:")
            for c in self.comparisons:
                out.append(f"  {c.resource}: measured/spec = {c.ratio:.1%}")
                out.append(f"    spec:     {c.spec.citation()}")
                out.append(f"    measured: {c.measured.citation()}")
        if self.below_floor is not None:
            out.append(self.below_floor.message)
        elif self.achieved:
            a = self.achieved
            out.append(
                f"achieved: {a.time_us:.4g} µs = {a.tflops:.4g} TFLOP/s "
                f"({a.pct_of_compute_peak or 0:.1f}% of compute "
                f"peak), {a.tb_s:.4g} TB/s ({a.pct_of_memory_peak or 0:.1f}% of bandwidth), "
                f"{a.pct_of_roofline or 0:.1f}% of roofline"
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

    def _issue_lines(self) -> list[str]:
        out = []
        for f in self.issue:
            out.append(f"  issue floor ({f.source}): {f.time_us:.4g} µs, bound by {f.binding}; {f.what}")
            warp = "warp" if f.unit == "SM" else "wave"
            for p in f.pipes:
                out.append(
                    f"    {p.pipe}: {p.warp_instructions:.4g} {warp} inst / "
                    f"({p.rate_inst_per_clk_per_sm:g} per clk per {f.unit} x {f.sm_count} {f.unit}s "
                    f"x {f.clock_mhz:g} MHz) = {p.time_us:.4g} µs"
                )
            if f.lower_bound:
                out.append(f"    lower bound: {f.lower_bound}")
        return out

    def cli_exit_code(self) -> int:
        return 1 if self.below_floor is not None else 0
