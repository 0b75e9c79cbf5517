"""Request/result models of `profile att` (pydantic only, import-light) and the agent-sized text view."""

from __future__ import annotations

from pydantic import Field

from kernelpilot.foundation.models import Request, Result


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
        return render(self, self.max_chars)


# The agent-sized text view of `AttResult` (about 3,000 characters by default). Sections in order of value; a
# section that would overflow the budget is shortened (fewer hotspots, no context) and the view says what it
# left out, so nothing is silently cut.


def cyc(n: float) -> str:
    """Cycle counts as the published reports print them: 2.86M, 492.9K, 640."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}K"
    return str(int(n))


def _hot(h: Hotspot, with_ctx: bool, key: str) -> list[str]:
    val = h.stall_cycles if key == "stall" else h.latency_cycles
    share = h.stall_share_pct if key == "stall" else h.latency_share_pct
    src = f"  {h.source.rsplit('/', 1)[-1]}" if h.source else ""
    lines = [
        f"  {h.rank:>2}. PC {h.address:<6} {cyc(val):>7} {share:4.1f}% hit {h.hits:<4} "
        f"{h.instruction[:44]}{src}"
    ]
    if with_ctx:
        if h.source_text:
            lines.append(f"      src: {h.source_text[:90]}")
        for c in h.context:
            if not c.hot:
                lines.append(f"      {c.address:<6} {c.instruction[:60]}")
    return lines


def render(res: AttResult, budget: int = 3000) -> str:
    t = res.totals
    head = [
        f"ATT {res.dispatch}"
        + (f"  kernel {res.kernel}" if res.kernel else "")
        + f"  (format {res.version})",
        f"totals: latency {cyc(t.latency_cycles)}  stall {cyc(t.stall_cycles)} ({t.stall_ratio_pct:.1f}%)  "
        f"idle {cyc(t.idle_cycles)}  insts {t.instructions} static / {t.instructions_executed} executed  "
        f"waves {t.waves_sampled}",
    ]
    if t.sampled_span_us is not None and t.shader_clock_mhz is not None:
        head.append(
            (
                f"dispatch {cyc(t.dispatch_cycles)} cycles = {t.dispatch_us:.1f} us, "
                if t.dispatch_us is not None and t.dispatch_cycles is not None
                else ""
            )
            + f"sampled waves span {cyc(t.sampled_span_cycles)} cycles = {t.sampled_span_us:.1f} us "
            f"(shader clock {t.shader_clock_mhz:.0f} MHz, measured)"
        )
    if res.wave_states:
        head.append("wave states: " + "  ".join(f"{w.name} {w.share_pct:.1f}%" for w in res.wave_states))
    head.append(
        "stall taxonomy: "
        + ", ".join(f"{b.label} {cyc(b.stall_cycles)} {b.share_pct:.1f}%" for b in res.stall_taxonomy)
    )
    head.append(
        "classes (lat%/stall%): "
        + ", ".join(f"{c.cls} {c.count} {c.latency_pct:.1f}/{c.stall_pct:.1f}" for c in res.classes)
    )
    if res.occupancy:
        occ = [
            (o.se, f"mean {o.mean_resident:.1f} peak {o.peak_resident} tail {o.tail_pct:.0f}%")
            for o in res.occupancy
        ]
        if len({v for _, v in occ}) == 1 and len(occ) > 1:
            occ = [(f"{occ[0][0]}..{occ[-1][0]} each", occ[0][1])]
        head.append("occupancy (waves resident per SE): " + ", ".join(f"{k} {v}" for k, v in occ))
    if res.registers:
        r = res.registers
        nxt = f", free {r.vgprs_to_free} VGPRs for +1 wave by VGPRs" if r.vgprs_to_free is not None else ""
        head.append(
            f"registers ({r.arch}): {r.vgprs} VGPRs -> {r.waves_per_simd} waves/SIMD, limiter "
            f"{r.limiter}{nxt}"
        )

    def tail(levers: int) -> list[str]:
        out: list[str] = []
        for f in res.findings:
            out.append(f"finding {f.rule}: {f.verdict} - {f.measured}")
            out += [f"  lever: {lv}" for lv in f.levers[:levers]]
        return out + [f"warning: {w}" for w in res.warnings]

    def build(n_stall: int, n_lat: int, ctx_n: int, levers: int) -> str:
        body = [f"top {n_stall} by stall (PC, cycles, % of stall, hits, instruction, source):"]
        for h in res.hotspots_by_stall[:n_stall]:
            body += _hot(h, h.rank <= ctx_n, "stall")
        if n_lat:
            body.append(f"top {n_lat} by latency:")
            for h in res.hotspots_by_latency[:n_lat]:
                body += _hot(h, False, "latency")
        omitted = (len(res.hotspots_by_stall) - n_stall) + (len(res.hotspots_by_latency) - n_lat)
        if omitted > 0:
            body.append(
                f"({omitted} more hotspots" + (", and their context," if not ctx_n else "") + " in --json)"
            )
        return "\n".join(head + body + tail(levers))

    n_stall, n_lat, ctx_n, levers = len(res.hotspots_by_stall), min(5, len(res.hotspots_by_latency)), 3, 2
    text = build(n_stall, n_lat, ctx_n, levers)
    # shed detail in order of least value until the view fits: context, latency list, levers, stall list
    while len(text) > budget and (ctx_n or n_lat or levers or n_stall > 1):
        if ctx_n:
            ctx_n -= 1
        elif n_lat:
            n_lat -= 1
        elif n_stall > 5:
            n_stall -= 1
        elif levers:
            levers -= 1
        else:
            n_stall -= 1
        text = build(n_stall, n_lat, ctx_n, levers)
    if len(text) > budget:
        text = text[: budget - 40].rsplit("\n", 1)[0] + "\n(cut to fit; --json has everything)"
    return text
