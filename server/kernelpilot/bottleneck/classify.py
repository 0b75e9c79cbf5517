"""Rules that turn a `KernelProfile` into a `BottleneckVerdict` with evidence a reader can check in the CSV.

Thresholds are heuristics on ncu's own speed-of-light percentages (no hardware constants here). The 60% / 80%
levels follow ncu's SpeedOfLight rule ("greater than 80% ... of the available compute or memory performance";
below 60% of peak on both sides ncu points to latency issues), Nsight Compute Profiling Guide, section
"Speed Of Light". The other cut-offs are kernelpilot's own and are printed with every verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from kernelpilot.bottleneck.fallback import fallback_cause, full_set_given
from kernelpilot.bottleneck.isa_facts import normalize as normalize_isa
from kernelpilot.bottleneck.models import (
    BottleneckVerdict,
    CitedPeak,
    ClassifyRequest,
    ClassifyResult,
    Evidence,
)
from kernelpilot.bottleneck.pipes import (
    COMPUTE_PIPES,
    PipeReading,
    busiest,
    issue_active_pct,
    pipe_utilization,
)
from kernelpilot.bottleneck.rules import Ctx, evaluate
from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.text import plain_errors
from kernelpilot.foundation.validation import load_json_argument
from kernelpilot.profile.models import KernelProfile, ProfileParseRequest, ProfileResult
from kernelpilot.roofline import stop
from kernelpilot.roofline.models import Ceiling, StopVerdict

HIGH_PCT = 80.0  # ncu SOL rule: unit is saturated
ISSUE_ACTIVE_METRIC = "smsp__issue_active.avg.pct_of_peak_sustained_active"
BOUND_PCT = 60.0  # ncu SOL rule: below this on both sides, latency issues
LEANING_PCT = 40.0  # kernelpilot: memory-leaning when memory SOL is 40-60% and memory stalls dominate
PARALLELISM_WAVES = 0.5  # kernelpilot: fewer than half a wave of blocks per SM = too little parallelism
LOW_OCCUPANCY_PCT = 10.0
SYNC_STALL_SHARE = 0.20  # kernelpilot: barrier+membar >= 20% of stalls per issued instruction
COMPUTE_PIPE_PCT = 60.0
DRAM_SHARE_OF_TOP = 0.8  # DRAM is the level when its SOL is within 80% of the busiest memory unit

_MEM_STALLS = ("long_scoreboard", "lg_throttle", "mio_throttle", "short_scoreboard", "drain", "tex_throttle")


def _f(p: KernelProfile, name: str) -> float | None:
    v = p.raw_metrics.get(name)
    return v if isinstance(v, float) else None


class _Builder:
    def __init__(self, p: KernelProfile, where: str) -> None:
        self.p = p
        self.where = where
        self.ev: list[Evidence] = []
        self.partial: list[str] = []

    def add(self, metric: str, value: float | str | None, threshold: str, source: str | None = None) -> None:
        if value is None:
            return
        self.ev.append(Evidence(metric=metric, value=value, threshold=threshold, source=source or self.where))


def _sol_names(p: KernelProfile) -> dict[str, str]:
    if p.source.startswith("ncu details"):
        base = "GPU Speed Of Light Throughput/"
        return {
            "sm": base + "Compute (SM) Throughput",
            "mem": base + "Memory Throughput",
            "l1": base + "L1/TEX Cache Throughput",
            "l2": base + "L2 Cache Throughput",
            "dram": base + "DRAM Throughput",
        }
    dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    if (
        dram not in p.raw_metrics
        and "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" in p.raw_metrics
    ):
        dram = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    return {
        "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "mem": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram": dram,
    }


def _peak_pcts(p: KernelProfile, peaks: list[CitedPeak], b: _Builder) -> tuple[float | None, float | None]:
    """Memory and compute % of cited peaks, for profiles without SOL percentages (e.g. rocprofv3)."""
    mem_pct = comp_pct = None
    if not p.duration_ns:
        return None, None
    secs = p.duration_ns * 1e-9
    for pk in peaks:
        scale = {"TB/s": 1e12, "GB/s": 1e9, "TFLOP/s": 1e12, "TOP/s": 1e12}.get(pk.unit)
        if scale is None:
            continue
        if pk.unit in ("TB/s", "GB/s") and p.bytes_dram() is not None:
            bw = (p.bytes_dram() or 0.0) / secs
            pct = 100.0 * bw / (pk.value * scale)
            mem_pct = max(mem_pct or 0.0, pct)
            b.add(
                "achieved_dram_bandwidth_pct_of_peak",
                round(pct, 2),
                f"vs cited peak ({pk.value} {pk.unit})",
                pk.citation,
            )
        elif pk.unit in ("TFLOP/s", "TOP/s") and p.flop_per_s:
            key = pk.metric.split("_")[0]  # bf16_dense_tflops -> bf16
            rates = [v for k, v in p.flop_per_s.items() if key in k] or [max(p.flop_per_s.values())]
            pct = 100.0 * max(rates) / (pk.value * scale)
            comp_pct = max(comp_pct or 0.0, pct)
            b.add(
                "achieved_flop_rate_pct_of_peak",
                round(pct, 2),
                f"vs cited peak ({pk.value} {pk.unit})",
                pk.citation,
            )
    return mem_pct, comp_pct


@dataclass
class _State:
    """The speed-of-light picture one verdict rule reads."""

    p: KernelProfile
    names: dict[str, str]
    sm: float
    mem: float
    l1: float | None
    l2: float | None
    dram: float | None
    stalls: dict[str, float]
    top_stalls: list[tuple[str, float]]
    waves: float | None
    occ: float | None
    top_pipe: PipeReading | None
    issue: float | None

    @property
    def stall_total(self) -> float:
        return sum(self.stalls.values())

    @property
    def top_unit(self) -> float:
        return max(x for x in (self.sm, self.mem, self.l1 or 0.0, self.l2 or 0.0, self.dram or 0.0))

    def sol(self, b: _Builder, which: tuple[str, ...], threshold: str) -> None:
        vals = {"sm": self.sm, "mem": self.mem, "l1": self.l1, "l2": self.l2, "dram": self.dram}
        for w in which:
            b.add(self.names[w], vals[w], threshold)

    def stall_evidence(self, b: _Builder) -> None:
        total = self.stall_total
        for r, v in self.top_stalls:
            share = v / total if total else 0.0
            b.add(
                f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio",
                v,
                f"top stall reason ({100 * share:.0f}% of {total:.1f} stalled warps per issue)",
            )


_Out = tuple[str, str | None, float, list[str], str]  # verdict, level, confidence, next, summary


def _unknown(p: KernelProfile, b: _Builder) -> BottleneckVerdict:
    return BottleneckVerdict(
        kernel=p.kernel,
        launch_id=p.launch_id,
        verdict="unknown",
        confidence=0.0,
        evidence=b.ev,
        next_measurements=[
            "kernelpilot profile run --mode roofline -- <program> (ncu SOL percentages), or give "
            "cited peaks (peaks_json) with DRAM bytes and FLOP counters for rocprofv3 profiles"
        ],
        summary="not enough data: speed-of-light percentages (or cited peaks with bytes/FLOPs) are missing",
        missing=[m for m in p.missing] or ["sm/memory speed-of-light percentages"],
    )


def _state(p: KernelProfile, b: _Builder, peaks: list[CitedPeak], isa: dict[str, object]) -> _State | None:
    names = _sol_names(p)
    sm, mem = p.sm_throughput_pct, p.memory_throughput_pct
    dram = p.dram_throughput_pct
    peak_mem, peak_comp = _peak_pcts(p, peaks, b)
    if sm is None and peak_comp is not None:
        sm, names["sm"] = peak_comp, "achieved_flop_rate_pct_of_peak"
    if mem is None and peak_mem is not None:
        mem, names["mem"] = peak_mem, "achieved_dram_bandwidth_pct_of_peak"
        dram, names["dram"] = peak_mem, "achieved_dram_bandwidth_pct_of_peak"
    for k, v in isa.items():
        if isinstance(v, (int, float, str)) and not isinstance(v, bool):
            b.add(f"isa.{k}", float(v) if isinstance(v, int) else v, "ISA fact (context)", "kernelpilot isa")
    if (sm is None) != (mem is None) and (peak_mem is not None or peak_comp is not None):
        # One side from a cited peak, the other unmeasured: classify on the known side, say so.
        if sm is None:
            sm, b.partial = 0.0, ["compute percent unknown (no FLOP counters or compute peak): treated as 0"]
        else:
            mem, b.partial = 0.0, ["memory percent unknown (no DRAM bytes or bandwidth peak): treated as 0"]
    if sm is None or mem is None:
        return None
    stalls = {k: v for k, v in p.warp_stalls.items() if k != "selected"}
    return _State(
        p=p,
        names=names,
        sm=sm,
        mem=mem,
        l1=p.l1_throughput_pct,
        l2=p.l2_throughput_pct,
        dram=dram,
        stalls=stalls,
        top_stalls=sorted(stalls.items(), key=lambda kv: -kv[1])[:3],
        waves=_f(p, "launch__waves_per_multiprocessor"),
        occ=p.achieved_occupancy_pct,
        top_pipe=busiest(pipe_utilization(p), COMPUTE_PIPES),
        issue=issue_active_pct(p),
    )


def _v_parallelism(s: _State, b: _Builder) -> _Out | None:
    few_blocks = s.waves is not None and s.waves < PARALLELISM_WAVES
    low_occ = s.occ is not None and s.occ < LOW_OCCUPANCY_PCT
    if not (max(s.sm, s.mem) < LEANING_PCT and (few_blocks or low_occ)):
        return None
    s.sol(b, ("sm", "mem"), f"< {LEANING_PCT:g} (%): no unit is busy")
    b.add("launch__waves_per_multiprocessor", s.waves, f"< {PARALLELISM_WAVES:g}: fewer blocks than SMs")
    b.add("launch__grid_size", _f(s.p, "launch__grid_size"), "blocks launched")
    b.add("device__attribute_multiprocessor_count", _f(s.p, "device__attribute_multiprocessor_count"), "SMs")
    b.add("sm__warps_active.avg.pct_of_peak_sustained_active", s.occ, f"< {LOW_OCCUPANCY_PCT:g} (%) achieved")
    s.stall_evidence(b)
    nxt = [
        "raise parallelism: more blocks (grid >= a few waves of SMs) or more independent work per "
        "thread (ILP)",
        "kernelpilot profile hotspots <source page>: a 'wait'/'long_scoreboard' chain on one line",
        "kernelpilot isa occupancy: registers/shared memory per block vs occupancy limits",
    ]
    return "latency_bound", None, 0.85, nxt, "too little parallelism: the GPU is mostly idle"


def _issue_bound(s: _State) -> bool:
    """Issue slots and SM throughput busy with no compute pipe saturated: bound by the instruction count
    (the issue roof), which the verdict files under compute_bound and names in its summary."""
    tp = s.top_pipe
    return (
        s.issue is not None
        and s.issue >= BOUND_PCT
        and s.sm >= BOUND_PCT
        and s.sm > s.mem
        and (tp is None or tp.pct < COMPUTE_PIPE_PCT)
    )


def _v_compute(s: _State, b: _Builder) -> _Out | None:
    tp = s.top_pipe
    issue_bound = _issue_bound(s)
    if not (
        (tp is not None and tp.pct >= COMPUTE_PIPE_PCT)
        or (tp is None and s.sm >= BOUND_PCT and s.sm > s.mem + 10.0)
        or issue_bound
    ):
        return None
    s.sol(b, ("sm", "mem"), f"compute SOL >= {BOUND_PCT:g} (%) and above memory SOL")
    if issue_bound:
        b.add(ISSUE_ACTIVE_METRIC, s.issue, f">= {BOUND_PCT:g} (%): issue slots busy, no pipe saturated")
    if tp is not None:
        b.add(tp.metric, tp.pct, f"pipe {tp.pipe}: busiest compute pipe (>= {COMPUTE_PIPE_PCT:g}% saturates)")
    for prec, rate in sorted(s.p.flop_per_s.items(), key=lambda kv: -kv[1])[:2]:
        if rate > 0:
            b.add(f"flop_per_s.{prec}", rate, "achieved (context)")
    conf = 0.9 if max(s.sm, tp.pct if tp else 0.0) >= HIGH_PCT else 0.7
    nxt = [
        "compare achieved FLOP/s with the cited peak (kernelpilot roofline) to see the headroom",
        "kernelpilot isa mix: are the intended tensor/FMA instructions there, at the widest form?",
    ]
    pipe = f", {tp.pipe} pipe {tp.pct:.0f}%" if tp else ""
    if issue_bound and s.issue is not None:
        nxt = [
            "kernelpilot roofline --isa <code object>: the issue floor from the kernel's instruction counts"
        ]
        return (
            "compute_bound",
            None,
            0.8 if s.issue >= HIGH_PCT else 0.7,
            nxt,
            f"issue-bound (compute side): issue slots {s.issue:.0f}% busy, SM {s.sm:.0f}%{pipe}: no single "
            "pipe saturates, the instruction count binds",
        )
    return "compute_bound", None, conf, nxt, f"compute-bound: SM {s.sm:.0f}% of peak{pipe}"


def _v_sync(s: _State, b: _Builder) -> _Out | None:
    total = s.stall_total
    sync = s.stalls.get("barrier", 0.0) + s.stalls.get("membar", 0.0)
    if not (total and sync / total >= SYNC_STALL_SHARE and s.top_unit < HIGH_PCT):
        return None
    b.add(
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        s.stalls.get("barrier", 0.0),
        f"barrier+membar >= {100 * SYNC_STALL_SHARE:.0f}% of stalls (here {100 * sync / total:.0f}% of "
        f"{total:.1f})",
    )
    if s.stalls.get("membar"):
        b.add("smsp__average_warps_issue_stalled_membar_per_issue_active.ratio", s.stalls["membar"], "membar")
    s.stall_evidence(b)
    s.sol(b, ("sm", "mem", "l1"), f"< {HIGH_PCT:g} (%): no unit saturated")
    nxt = [
        "kernelpilot profile hotspots: stall samples on BAR.SYNC / MEMBAR lines",
        "kernelpilot isa mix: barriers per loop iteration; replace shared-memory tree steps by warp shuffles",
    ]
    return (
        "sync_bound",
        None,
        0.6,
        nxt,
        "synchronization-bound: warps wait at barriers a large share of the time",
    )


_MEM_NEXT = {
    "dram": ["compare DRAM bytes with the algorithmic minimum (each input read once, output written once)"],
    "l2": ["kernelpilot profile hotspots: lines with drain/lg stalls (full set: sectors per request)"],
    "l1_shared": ["kernelpilot isa mix: vector width of shared/global loads (LDS.128, LDG.128)"],
}


def _memory_level_evidence(s: _State, b: _Builder, level: str) -> None:
    if level == "l2":
        for op in ("ld", "st"):
            name = f"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_{op}.ratio"
            b.add(name, _f(s.p, name), "sectors per request: 4 = coalesced 4-byte access, up to 32")
    if level == "l1_shared":
        b.add(
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
            _f(s.p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
            "shared-memory bank conflicts",
        )
        b.add(
            "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
            _f(s.p, "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"),
            "LSU pipe utilization (%)",
        )
    if s.p.bytes_dram() is not None:
        b.add(
            "dram__bytes_read.sum + dram__bytes_write.sum", s.p.bytes_dram(), "bytes moved (vs the minimum)"
        )


def _v_memory(s: _State, b: _Builder) -> _Out | None:
    total = s.stall_total
    mem_stall = sum(s.stalls.get(r, 0.0) for r in _MEM_STALLS)
    dominant = bool(total) and mem_stall / total >= 0.5
    if not (s.mem >= BOUND_PCT or (s.mem >= LEANING_PCT and s.mem > s.sm and dominant)):
        return None
    levels = {"dram": s.dram or 0.0, "l2": s.l2 or 0.0, "l1_shared": s.l1 or 0.0}
    busiest = max(levels.values())
    level = "dram" if levels["dram"] >= DRAM_SHARE_OF_TOP * busiest else max(levels, key=lambda k: levels[k])
    s.sol(
        b,
        ("mem", "sm"),
        f"memory SOL >= {BOUND_PCT:g} (%)"
        if s.mem >= BOUND_PCT
        else f"memory SOL {LEANING_PCT:g}-{BOUND_PCT:g} (%) with memory stalls dominant",
    )
    s.sol(
        b, ("dram", "l2", "l1"), f"level = DRAM if within {DRAM_SHARE_OF_TOP:g}x of the busiest, else busiest"
    )
    s.stall_evidence(b)
    _memory_level_evidence(s, b, level)
    conf = 0.9 if s.mem >= HIGH_PCT else (0.75 if s.mem >= BOUND_PCT else 0.55)
    summary = f"memory-bound at {level}: memory SOL {s.mem:.0f}%, {level} {levels[level]:.0f}%"
    return "memory_bound", level, conf, list(_MEM_NEXT[level]), summary


def _v_latency(s: _State, b: _Builder) -> _Out:
    s.sol(b, ("sm", "mem"), f"< {BOUND_PCT:g} (%) on both sides: latency (ncu SOL rule)")
    b.add(
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        _f(s.p, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "issue slots busy (%)",
    )
    b.add("sm__warps_active.avg.pct_of_peak_sustained_active", s.occ, "achieved occupancy (%)")
    s.stall_evidence(b)
    local = (_f(s.p, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") or 0.0) + (
        _f(s.p, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum") or 0.0
    )
    if local > 0:
        b.add("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum + _st.sum", local, "> 0: local-memory traffic")
    nxt = [
        "kernelpilot profile hotspots: which lines hold the long_scoreboard / lg_throttle stalls",
        "kernelpilot isa resources: spills / stack frame (local memory) and registers",
    ]
    summary = "latency-bound: neither compute nor memory is near its roof; warps wait on dependencies" + (
        " (local-memory traffic present)" if local > 0 else ""
    )
    return "latency_bound", None, 0.6, nxt, summary


_VERDICT_RULES = (_v_parallelism, _v_compute, _v_sync, _v_memory)
_FULL_SET_RULES = ("uncoalesced_global_access", "shared_bank_conflicts", "low_eligible_warps")


def _wiki_ceilings(device: str | None, wiki_dirs: list[str]) -> tuple[Ceiling, Ceiling | None] | None:
    """(measured copy ceiling, spec bandwidth beside) of the profiled GPU from the wiki; the spec alone when
    the wiki has no measured line; None when the device is not in the wiki."""
    if not device:
        return None
    from kernelpilot.foundation.errors import KernelpilotError
    from kernelpilot.wiki.core import load_wiki

    try:
        wiki = load_wiki([Path(d) for d in wiki_dirs])
        gpu = wiki.resolve_gpu(device)
    except KernelpilotError:  # documented fallback: a GPU the wiki lacks has no ceiling (ncu's % is used)
        return None
    measured, spec = wiki.get(gpu, "measured_copy_bandwidth_tb_s"), wiki.get(gpu, "memory_bandwidth_tb_s")
    if measured is not None:
        return stop.from_cited(measured), stop.from_cited(spec) if spec is not None else None
    return (stop.from_cited(spec), None) if spec is not None else None


def memory_stop(p: KernelProfile, peaks: list[CitedPeak], wiki_dirs: list[str]) -> StopVerdict | None:
    """The one stop verdict (kernelpilot.roofline.stop) for this launch's DRAM traffic: peaks_json's memory
    peak when given, else the wiki's measured copy ceiling of the profiled GPU."""
    nbytes = p.bytes_dram()
    if not p.duration_ns or not nbytes:
        return None
    roofs: tuple[Ceiling, Ceiling | None] | None = None
    for pk in peaks:
        if pk.unit in ("TB/s", "GB/s"):
            c = Ceiling(
                metric=pk.metric,
                value=pk.value,
                unit=pk.unit,
                citation=pk.citation,
                measured=pk.metric.startswith("measured_"),
            )
            roofs = (c, None)
            break
    if roofs is None:
        name = p.raw_metrics.get("device__attribute_display_name")  # ncu names the GPU; `device` is its index
        roofs = _wiki_ceilings(name if isinstance(name, str) else p.device, wiki_dirs)
    if roofs is None:
        return None
    basis = "DRAM bytes/time"  # the profile's own, beside the roofline's counted work / --measured-time-us
    return stop.stop_verdict("memory", nbytes, roofs[0], roofs[1], p.duration_ns / 1e3, basis=basis)


def classify_profile(
    p: KernelProfile,
    where: str,
    peaks: list[CitedPeak] | None = None,
    isa: dict[str, object] | None = None,
    wiki: list[str] | None = None,
) -> BottleneckVerdict:
    """Verdict (first matching verdict rule) plus the root causes of `kernelpilot.bottleneck.rules`."""
    b = _Builder(p, where)
    s = _state(p, b, peaks or [], isa or {})
    if s is None:
        return _unknown(p, b)
    out = next((o for o in (r(s, b) for r in _VERDICT_RULES) if o is not None), None) or _v_latency(s, b)
    verdict, level, conf, nxt, summary = out
    mem_stop = memory_stop(p, peaks or [], wiki or [])
    causes, ruled_out = evaluate(Ctx(p=p, where=where, isa=isa or {}, stop=mem_stop))
    evaluated = {c.rule for c in causes} | {r.split(":", 1)[0] for r in ruled_out}
    full = full_set_given(p)
    if not causes and full and verdict != "unknown":
        causes = [fallback_cause(p, verdict, summary, ruled_out, where)]
    if causes:
        nxt = ["kernelpilot suggest --bottleneck <this JSON>: levers ranked by these causes' gains"]
    if not set(_FULL_SET_RULES) <= evaluated and (not full or not p.raw_metrics):
        nxt.append(_measure_more(p))
    res = _verdict(p, verdict, level, conf, b, nxt, summary)
    res.causes, res.ruled_out, res.stop = causes, ruled_out, mem_stop
    unchecked = (isa or {}).get("isa_not_checked")
    if isinstance(unchecked, list) and unchecked:  # the narrow-load and matrix rules had no facts to read
        res.missing.append(
            f"ISA {', '.join(map(str, unchecked))}: isa fit ran without a disassembler (pip install "
            "nvidia-cuda-nvdisasm, then isa fit again)"
        )
    return res


def _measure_more(p: KernelProfile) -> str:
    """What to collect for the cause rules: never the mode the input already is (a stall mix means the
    input was a full set; without raw metrics it lost the sectors, bank conflicts and active threads)."""
    if not p.raw_metrics and p.warp_stalls:
        return (
            "pass the profiler file as profile_path (or `kernelpilot profile parse --json "
            "--include-raw-metrics`): this full-set profile JSON carries no raw metrics, so the cause rules "
            "cannot read its sectors, bank conflicts or active threads"
        )
    return (
        "kernelpilot profile run --mode full (--include-raw-metrics when its JSON is saved for "
        "--profile-json): the cause rules need the full set (sectors per request, bank conflicts, local "
        "memory, stall mix, pipe utilization)"
    )


def _verdict(
    p: KernelProfile, verdict: str, level: str | None, conf: float, b: _Builder, nxt: list[str], summary: str
) -> BottleneckVerdict:
    partial = b.partial
    return BottleneckVerdict.model_validate(
        {
            "kernel": p.kernel,
            "launch_id": p.launch_id,
            "verdict": verdict,
            "memory_level": level,
            "confidence": round(conf - (0.15 if partial else 0.0), 2),
            "evidence": b.ev,
            "next_measurements": nxt,
            "summary": summary,
            "missing": [*partial, *p.missing] if partial else list(p.missing),
        }
    )


def classify_bottleneck(req: ClassifyRequest) -> ClassifyResult:
    if req.att_dir is not None and req.profile_path is None and req.profile_json is None:
        from kernelpilot.profile.att.verdict import att_verdict

        return ClassifyResult(verdicts=[att_verdict(req.att_dir)])
    if (req.profile_path is None) == (req.profile_json is None):
        raise InvalidArgumentError(
            "give exactly one of profile_path or profile_json",
            "pass the profiler output path, or a profile_parse result as JSON",
        )
    if req.profile_path is not None:
        from kernelpilot.profile.core import profile_parse

        res = profile_parse(ProfileParseRequest(path=req.profile_path, include_raw_metrics=True))
        where_base = req.profile_path
    else:
        try:
            res = ProfileResult.model_validate(load_json_argument(req.profile_json, "profile_json"))
        except ValidationError as exc:
            raise InvalidArgumentError(
                f"profile_json is not a profile result: {plain_errors(exc.errors())}",
                "pass the JSON printed by `kernelpilot profile parse --json`",
            ) from None
        where_base = res.path or "profile_json"
    peaks: list[CitedPeak] = []
    if req.peaks_json:
        try:
            peaks = [CitedPeak.model_validate(x) for x in load_json_argument(req.peaks_json, "peaks_json")]
        except ValidationError as exc:
            raise InvalidArgumentError(
                f"peaks_json is invalid: {plain_errors(exc.errors())}",
                'give [{"metric":..,"value":..,"unit":"TB/s","citation":"..."}]',
            ) from None
        except TypeError:  # not a list of objects
            raise InvalidArgumentError(
                "peaks_json is invalid: it must be a JSON list of objects",
                'give [{"metric":..,"value":..,"unit":"TB/s","citation":"..."}]',
            ) from None
    isa_doc: object = None
    if req.isa_facts_json:
        isa_doc = load_json_argument(req.isa_facts_json, "isa_facts_json")
        if not isinstance(isa_doc, (dict, list)):
            raise InvalidArgumentError(
                "isa_facts_json must be a JSON object or list",
                'e.g. {"registers": 32}, or the JSON of `kernelpilot isa fit --json`',
            )
    kernels = [k for k in res.kernels if not req.kernel or req.kernel in k.kernel]
    verdicts = [
        classify_profile(
            k,
            f"{where_base} (launch ID {k.launch_id}, {k.source.split(' (')[0]})",
            peaks,
            normalize_isa(isa_doc, k.kernel) if isa_doc is not None else None,
            req.wiki,
        )
        for k in kernels
    ]
    if req.att_dir is not None:
        from kernelpilot.profile.att.verdict import att_verdict

        verdicts.append(att_verdict(req.att_dir))
    return ClassifyResult(verdicts=verdicts, warnings=list(res.warnings))
