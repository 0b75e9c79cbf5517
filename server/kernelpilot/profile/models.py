"""Pydantic models of the profiling layer: the normalized `KernelProfile`, hotspots, requests and results.

Cheap to import (pydantic only): capability declarations import this module.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelpilot.foundation.models import Request, Result
from kernelpilot.profile.att.models import AttResult

ProfilerName = Literal["ncu", "rocprofv3"]


class PipeUsage(BaseModel):
    """One SM instruction pipe of an ncu launch: warp instructions it executed and how busy it was.

    Read by `bottleneck` (pipe saturation) and `roofline.issue` (the measured issue floor). ncu's full set
    holds the utilization only; the counts need `--metrics sm__inst_executed_pipe_<pipe>.sum` added
    (bench/issue_bound.py does).
    """

    model_config = ConfigDict(extra="forbid")

    pipe: str = Field(
        description="ncu pipe name: alu, fma, fmaheavy, lsu, xu, uniform, cbu, adu, tensor_op_*, ..."
    )
    inst_executed: float | None = Field(
        default=None,
        description="Warp instructions executed on this pipe (sm__inst_executed_pipe_<pipe>.sum).",
    )
    utilization_pct: float | None = Field(
        default=None,
        description="Issue utilization, % of the pipe's peak over active cycles "
        "(sm__inst_executed_pipe_<pipe>.avg.pct_of_peak_sustained_active, else ..._elapsed).",
    )
    peak_inst_per_cycle: float | None = Field(
        default=None,
        description="ncu's own peak for the pipe, warp instructions per cycle summed over SMs "
        "(sm__inst_executed_pipe_<pipe>.sum.peak_sustained), when collected.",
    )
    cycles_active_pct: float | None = Field(
        default=None,
        description="Pipe busy cycles, % of peak over active cycles (sm__pipe_<pipe>_cycles_active.avg."
        "pct_of_peak_sustained_active), when ncu has that counter for the pipe.",
    )


class KernelProfile(BaseModel):
    """One kernel launch, normalized across profilers. Units are in the field names; None = not measured."""

    model_config = ConfigDict(extra="forbid")

    kernel: str = Field(description="Kernel (function) name as the profiler printed it.")
    launch_id: int | None = Field(default=None, description="Profiler's launch/dispatch id.")
    profiler: ProfilerName
    source: str = Field(
        description="What it was parsed from: ncu raw|details page, rocprofv3 kernel_trace|..."
    )
    device: str | None = None
    grid: list[int] | None = Field(default=None, description="Grid dims (see grid_unit).")
    block: list[int] | None = Field(default=None, description="Block / workgroup dims in threads.")
    grid_unit: Literal["blocks", "work_items"] = "blocks"
    duration_ns: float | None = None
    dram_bytes_read: float | None = None
    dram_bytes_write: float | None = None
    flop_count: dict[str, float] = Field(
        default_factory=dict, description="FLOPs per precision (fp32, fp16, fp64, tensor_bf16, ...)."
    )
    flop_per_s: dict[str, float] = Field(default_factory=dict, description="Achieved FLOP/s per precision.")
    sm_throughput_pct: float | None = Field(default=None, description="SOL compute (SM) % of peak.")
    memory_throughput_pct: float | None = Field(default=None, description="SOL memory % of peak.")
    l1_throughput_pct: float | None = None
    l2_throughput_pct: float | None = None
    dram_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    registers_per_thread: float | None = Field(default=None, description="Registers (AMD: arch VGPRs).")
    sgpr_count: float | None = None
    accum_vgpr_count: float | None = None
    shared_mem_per_block_bytes: float | None = Field(default=None, description="Static+dynamic shared / LDS.")
    scratch_bytes_per_thread: float | None = Field(default=None, description="Local / private segment.")
    l1_hit_rate_pct: float | None = None
    l2_hit_rate_pct: float | None = None
    warp_stalls: dict[str, float] = Field(
        default_factory=dict,
        description="Stall reason -> warps stalled per issued instruction (ncu) or wave-state share (AMD).",
    )
    counters: dict[str, float] = Field(default_factory=dict, description="AMD PMC counters as collected.")
    inst_executed: float | None = Field(
        default=None, description="Warp instructions executed by the launch (smsp__inst_executed.sum)."
    )
    issue_active_pct: float | None = Field(
        default=None,
        description="Share of active cycles a scheduler issued an instruction "
        "(smsp__issue_active.avg.pct_of_peak_sustained_active).",
    )
    sm_cycles_active: float | None = Field(
        default=None, description="Cycles an SM was active, average over SMs (sm__cycles_active.avg)."
    )
    pipes: list[PipeUsage] = Field(
        default_factory=list,
        description="Per-pipe instruction counts and utilization (ncu full set), busiest first.",
    )
    passes: int | None = Field(default=None, description="Replay passes the profiler used for this launch.")
    missing: list[str] = Field(
        default_factory=list, description="Normalized fields the input could not give."
    )
    raw_metrics: dict[str, float | str | None] = Field(
        default_factory=dict, description="Every metric as collected, numbers converted to raw_units."
    )
    raw_units: dict[str, str] = Field(default_factory=dict)

    def bytes_dram(self) -> float | None:
        if self.dram_bytes_read is None or self.dram_bytes_write is None:
            return None
        return self.dram_bytes_read + self.dram_bytes_write

    def summary_line(self) -> str:
        def f(v: float | None, scale: float = 1.0, fmt: str = "{:.1f}") -> str:
            return "n/a" if v is None else fmt.format(v / scale)

        flops = sum(self.flop_count.values()) if self.flop_count else None
        return (
            f"{self.kernel[:48]:48s} {f(self.duration_ns, 1e3, '{:.2f}'):>10s} us "
            f"dram {f(self.bytes_dram(), 1e6, '{:.2f}'):>9s} MB  flop {f(flops, 1e9, '{:.3f}'):>8s} G  "
            f"SOL sm {f(self.sm_throughput_pct)}% mem {f(self.memory_throughput_pct)}% "
            f"dram {f(self.dram_throughput_pct)}%"
        )


class SassLine(BaseModel):
    """One SASS/ISA instruction of the source page with its sampled stalls and mapped source line."""

    model_config = ConfigDict(extra="forbid")

    address: str
    instruction: str
    stall_samples: float = 0.0
    stall_samples_not_issued: float = 0.0
    instructions_executed: float | None = None
    stall_reasons: dict[str, float] = Field(default_factory=dict)
    file: str | None = None
    line: int | None = None
    source_text: str | None = None


class SourcePage(BaseModel):
    """The source page of one kernel."""

    model_config = ConfigDict(extra="forbid")

    kernel: str
    file: str | None = None
    lines: list[SassLine] = Field(default_factory=list)


class Hotspot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: int
    share_pct: float = Field(description="Share of all stall samples of the kernel.")
    stall_samples: float
    top_reasons: list[str] = Field(description="Dominant stall reasons on this line, 'reason: samples'.")
    address: str | None = None
    instruction: str | None = None
    location: str | None = Field(
        default=None, description="file:line of the source, when -lineinfo was used."
    )
    source_text: str | None = None


class KernelHotspots(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kernel: str
    total_samples: float
    sass: list[Hotspot] = Field(description="SASS lines ranked by stall samples.")
    source_lines: list[Hotspot] = Field(description="Source lines ranked by their SASS lines' stall samples.")
    stall_reasons: dict[str, float] = Field(description="Kernel-wide stall samples per reason.")


# ---------------------------------------------------------------- requests / results


class ProfileParseRequest(Request):
    path: str = Field(
        description="Profiler output to parse: ncu CSV (--csv --page raw or --page details), an .ncu-rep "
        "(read through `ncu --import`), rocprofv3 *kernel_trace.csv, *counter_collection.csv or "
        "*results.json."
    )
    kind: Literal[
        "auto", "ncu_raw", "ncu_details", "ncu_rep", "rocprof_trace", "rocprof_counters", "rocprof_json"
    ] = Field(default="auto", description="Input format; auto detects from the header.")
    kernel: str | None = Field(default=None, description="Only kernels whose name contains this text.")
    include_raw_metrics: bool = Field(
        default=False, description="Return every raw metric too (large: ~2000 per kernel for a full ncu set)."
    )


class ProfileResult(Result):
    profiler: ProfilerName
    path: str | None = Field(default=None, description="File parsed or written.")
    kernels: list[KernelProfile]
    passes: int | None = Field(default=None, description="Replay passes used (max over launches).")
    command: list[str] = Field(default_factory=list, description="Profiler argv that was run, if any.")
    wall_s: float | None = None
    warnings: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list, description="Fields missing in at least one kernel.")
    att: AttResult | None = Field(default=None, description="mode=att: the thread-trace analysis.")

    def render_text(self) -> str:
        if self.att is not None:
            cmd = " ".join(self.command)
            return f"rocprofv3 --att: {cmd}\n" + self.att.render_text()
        out = [
            f"{self.profiler}: {len(self.kernels)} kernel launch(es)"
            + (f" from {self.path}" if self.path else "")
        ]
        if self.passes is not None:
            out.append(f"passes: {self.passes}")
        if self.wall_s is not None:
            out.append(f"wall: {self.wall_s:.2f} s")
        for k in self.kernels:
            out.append("  " + k.summary_line())
        for w in self.warnings:
            out.append(f"warning: {w}")
        if self.missing:
            out.append("missing: " + ", ".join(self.missing))
        return "\n".join(out)


class ProfileRunRequest(Request):
    command: list[str] = Field(
        description="The program to profile and its arguments (argv, not a shell string)."
    )
    profiler: Literal["auto", "ncu", "rocprofv3"] = Field(
        default="auto", description="auto: ncu if found, else rocprofv3."
    )
    mode: Literal["roofline", "full", "sections", "metrics", "att"] = Field(
        default="roofline",
        description="roofline: the minimal metric set (duration, DRAM bytes, FLOPs by precision, SOL "
        "percentages) in few "
        "passes; full: ncu --set full; sections: the named --section list; metrics: the named --metrics "
        "list; att: rocprofv3 thread trace, decoded and analysed (result.att).",
    )
    roofline_sol: bool = Field(
        default=True, description="roofline mode: also collect the SOL headline (about 10 of the passes)."
    )
    roofline_tensor: bool = Field(
        default=True,
        description="roofline mode: also collect tensor-pipe FLOP counters (about 6 more passes).",
    )
    sections: list[str] = Field(
        default_factory=list, description="ncu section identifiers for mode=sections."
    )
    metrics: list[str] = Field(
        default_factory=list, description="ncu metric names (mode=metrics) or rocprofv3 --pmc."
    )
    kernel_name: str | None = Field(
        default=None, description="Kernel filter: exact name, or 'regex:<expr>' (ncu --kernel-name)."
    )
    launch_skip: int = Field(default=0, ge=0, description="Launches of matching kernels to skip first.")
    launch_count: int | None = Field(default=1, ge=1, description="Launches to profile (None: all).")
    replay_mode: Literal["kernel", "application", "range", "app-range"] = "kernel"
    clock_control: Literal["none", "base"] = Field(
        default="none", description="ncu --clock-control; 'none' leaves shared machines' clocks alone."
    )
    profile_from_start: bool = Field(default=True, description="False: only inside cudaProfilerStart/Stop.")
    import_source: bool = Field(default=False, description="ncu --import-source yes (needs -lineinfo).")
    export: str | None = Field(default=None, description="Also write an .ncu-rep report to this path.")
    output_dir: str | None = Field(
        default=None, description="rocprofv3 output directory (default: a temp dir)."
    )
    timeout_s: float = Field(default=600.0, gt=0, description="Kill the profiler (process group) after this.")
    workdir: str | None = Field(default=None, description="Working directory of the profiled program.")
    include_raw_metrics: bool = Field(default=False, description="Return every raw metric too.")
    att_target_cu: int = Field(default=1, ge=0, le=15, description="mode=att: CU traced in detail.")
    att_shader_engine_mask: str = Field(default="0xf", description="mode=att: bitmask of SEs traced.")
    att_simd_select: str | None = Field(default=None, description="mode=att: SIMD bitmask (gfx9) or id.")
    att_buffer_size: str | None = Field(
        default=None, description="mode=att: trace buffer bytes, e.g. 0x6000000 (rocprofv3 default 256 MB)."
    )
    att_iteration_range: str | None = Field(
        default=None, description="mode=att: rocprofv3 kernel_iteration_range, passed verbatim, e.g. '[1]'."
    )
    att_input: Literal["argv", "yaml"] = Field(
        default="argv", description="mode=att: flags on the command line, or an input YAML job given with -i."
    )


class HotspotsRequest(Request):
    path: str = Field(
        description="ncu source page CSV (`ncu --import r.ncu-rep --csv --page source --print-source "
        "cuda,sass`"
        " maps to file:line; `--print-source sass` gives SASS only) or an .ncu-rep (needs ncu)."
    )
    top: int = Field(default=10, ge=1, le=1000, description="Hotspots to list per kernel.")
    kernel: str | None = Field(default=None, description="Only kernels whose name contains this text.")


class HotspotsResult(Result):
    path: str
    kernels: list[KernelHotspots]
    warnings: list[str] = Field(default_factory=list)

    def render_text(self) -> str:
        out: list[str] = []
        for k in self.kernels:
            out.append(f"kernel {k.kernel}: {k.total_samples:.0f} stall samples")
            reasons = sorted(k.stall_reasons.items(), key=lambda kv: -kv[1])[:5]
            out.append("  top reasons: " + ", ".join(f"{r} {v:.0f}" for r, v in reasons))
            if k.source_lines:
                out.append("  source lines:")
                for h in k.source_lines:
                    out.append(
                        f"   {h.rank:>3d}. {h.share_pct:5.1f}%  {h.location or '?':40s} "
                        f"{(h.source_text or '').strip()[:60]}  [{'; '.join(h.top_reasons)}]"
                    )
            out.append("  SASS:")
            for h in k.sass:
                out.append(
                    f"   {h.rank:>3d}. {h.share_pct:5.1f}%  {h.address or '':>16s}  "
                    f"{(h.instruction or '').strip()[:44]:44s}"
                    f" {h.location or ''}  [{'; '.join(h.top_reasons)}]"
                )
        out.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(out)
