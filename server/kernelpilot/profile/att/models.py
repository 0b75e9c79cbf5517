"""Request/result models of `profile att` (pydantic only, import-light) and the agent-sized text view."""

from __future__ import annotations

from pydantic import Field

from kernelpilot.models import Request, Result


class AttRequest(Request):
    path: str = Field(
        description="A decoded rocprofv3 ATT dispatch folder (ui_output_agent_<pid>_dispatch_<n>/ with "
        "code.json), "
        "or a folder holding such folders (the newest is taken)."
    )
    top: int = Field(default=10, ge=1, le=200, description="Hotspots to list by stall and by latency.")
    context: int = Field(
        default=2, ge=0, le=20, description="Instructions of disassembly before/after a hotspot."
    )
    kernel_trace: str | None = Field(
        default=None,
        description="rocprofv3 kernel_trace.csv giving VGPR/SGPR/LDS/workgroup size for register pressure "
        "(default: a *kernel_trace.csv in the folder or its parent, when there is one).",
    )
    code_object: str | None = Field(
        default=None,
        description="HSACO / offload bundle of the kernel: registers and LDS from its descriptor.",
    )
    kernel: str | None = Field(
        default=None, description="Kernel name (regex) to pick in the code object or kernel trace."
    )
    arch: str | None = Field(default=None, description="gfx target for the occupancy model, e.g. gfx950.")
    vgprs: int | None = Field(
        default=None, ge=1, description="Arch VGPRs per lane (overrides other sources)."
    )
    agprs: int | None = Field(default=None, ge=0, description="Accumulation VGPRs per lane.")
    sgprs: int | None = Field(default=None, ge=0, description="SGPRs per wave.")
    lds_bytes: int | None = Field(default=None, ge=0, description="LDS bytes per workgroup.")
    block_size: int | None = Field(default=None, ge=1, description="Work-items per workgroup.")
    max_chars: int = Field(default=3000, ge=500, description="Budget of the text view (characters).")


class AttTotals(Result):
    instructions: int = Field(description="static instructions in code.json (comment rows excluded)")
    hits: int = Field(description="sum of Hit: instructions issued by the sampled waves")
    latency_cycles: int
    stall_cycles: int
    idle_cycles: int
    stall_ratio_pct: float = Field(description="stall / latency, %")
    waves_sampled: int
    instructions_executed: int = Field(description="sum of num_insts over the per-wave files")
    sampled_span_cycles: int = Field(description="first wave begin to last wave end (shader clock)")
    trace_window_us: float | None = Field(
        None, description="realtime.json: trace start to stop, microseconds"
    )
    shader_clock_mhz: float | None = Field(
        None, description="gfx clock ticks / realtime over the trace window"
    )
    sampled_span_us: float | None = None
    dispatch_cycles: int | None = Field(
        None, description="first wave start to last wave end over all SEs in occupancy.json (shader clock)"
    )
    dispatch_us: float | None = Field(None, description="dispatch_cycles at the measured shader clock")


class WaveState(Result):
    state: int
    name: str
    wave_cycles: int = Field(description="time-weighted count of waves in this state (wave x cycles)")
    share_pct: float


class StallBucket(Result):
    bucket: str
    label: str
    stall_cycles: int
    share_pct: float = Field(description="% of all stall cycles")
    instructions: int


class ClassStats(Result):
    cls: str
    count: int
    hits: int
    latency_cycles: int
    stall_cycles: int
    latency_pct: float
    stall_pct: float


class ContextLine(Result):
    index: int
    address: int
    instruction: str
    hot: bool = False


class Hotspot(Result):
    rank: int
    index: int = Field(description="instruction row in code.json")
    address: int = Field(description="Vaddr (the viewer's PC)")
    instruction: str
    hits: int
    latency_cycles: int
    stall_cycles: int
    idle_cycles: int
    stall_share_pct: float = Field(description="% of all stall cycles")
    latency_share_pct: float = Field(description="% of all latency cycles")
    bucket: str
    cls: str
    source: str | None = Field(None, description="file:line as recorded in code.json")
    source_text: str | None = Field(None, description="that line, from the captured source snapshot")
    context: list[ContextLine] = Field(default_factory=list)


class WaveSummary(Result):
    count: int
    per_se: dict[str, int]
    duration_min_cycles: int
    duration_median_cycles: int
    duration_max_cycles: int
    begin_spread_cycles: int = Field(description="last wave begin - first wave begin")
    end_spread_cycles: int = Field(description="last wave end - first wave end")


class SeOccupancy(Result):
    se: str
    waves_started: int
    mean_resident: float = Field(
        description="time-weighted resident waves on the SE (occupancy.json covers all its CUs)"
    )
    peak_resident: int
    window_cycles: int
    tail_pct: float = Field(
        description="share of the window after residency last fell below half its peak (long tail: high)"
    )


class RegisterPressure(Result):
    source: str = Field(description="where the register counts came from")
    arch: str
    vgprs: int
    agprs: int | None = None
    sgprs: int | None = None
    lds_bytes: int | None = None
    block_size: int
    waves_per_simd: int | None
    vgpr_waves_per_simd: int | None = Field(None, description="waves/SIMD the VGPRs alone allow")
    limiter: str
    vgprs_for_next_wave: int | None = Field(None, description="VGPR budget for one more wave per SIMD")
    vgprs_to_free: int | None = Field(None, description="VGPRs to free for one more wave per SIMD")
    steps: list[str] = Field(default_factory=list)
    isa_max_vgpr: int | None = Field(None, description="highest v register named in the disassembly + 1")
    sources: list[str] = Field(default_factory=list)


class Finding(Result):
    rule: str
    verdict: str
    measured: str
    evidence: list[str] = Field(default_factory=list)
    levers: list[str] = Field(default_factory=list)


class AttResult(Result):
    path: str
    dispatch: str
    kernel: str | None = None
    version: str
    totals: AttTotals
    wave_states: list[WaveState]
    stall_taxonomy: list[StallBucket]
    classes: list[ClassStats]
    hotspots_by_stall: list[Hotspot]
    hotspots_by_latency: list[Hotspot]
    waves: WaveSummary | None = None
    occupancy: list[SeOccupancy] = Field(default_factory=list)
    registers: RegisterPressure | None = None
    source_mapped: int = Field(0, description="instructions with a file:line")
    findings: list[Finding] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    max_chars: int = Field(3000, exclude=True)

    def render_text(self) -> str:
        from kernelpilot.profile.att.view import render

        return render(self, self.max_chars)
