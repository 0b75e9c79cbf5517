"""Rules that turn a `KernelProfile` into a `BottleneckVerdict` with evidence a reader can check in the CSV.

Thresholds are heuristics on ncu's own speed-of-light percentages (no hardware constants here). The 60% / 80%
levels follow ncu's SpeedOfLight rule ("greater than 80% ... of the available compute or memory performance";
below 60% of peak on both sides ncu points to latency issues), Nsight Compute Profiling Guide, section
"Speed Of Light". The other cut-offs are kernelpilot's own and are printed with every verdict.
"""

from __future__ import annotations

import json

from kernelpilot.bottleneck.models import (
    BottleneckVerdict,
    CitedPeak,
    ClassifyRequest,
    ClassifyResult,
    Evidence,
)
from kernelpilot.errors import InvalidArgumentError
from kernelpilot.profile.models import KernelProfile, ProfileParseRequest, ProfileResult

HIGH_PCT = 80.0  # ncu SOL rule: unit is saturated
BOUND_PCT = 60.0  # ncu SOL rule: below this on both sides, latency issues
LEANING_PCT = 40.0  # kernelpilot: memory-leaning when memory SOL is 40-60% and memory stalls dominate
PARALLELISM_WAVES = 0.5  # kernelpilot: fewer than half a wave of blocks per SM = too little parallelism
LOW_OCCUPANCY_PCT = 10.0
SYNC_STALL_SHARE = 0.20  # kernelpilot: barrier+membar >= 20% of stalls per issued instruction
COMPUTE_PIPE_PCT = 60.0
DRAM_SHARE_OF_TOP = 0.8  # DRAM is the level when its SOL is within 80% of the busiest memory unit

_PIPES = {
    "tensor": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "fma": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "fp64": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "alu": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "xu": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
}
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


def classify_profile(
    p: KernelProfile, where: str, peaks: list[CitedPeak] | None = None, isa: dict[str, object] | None = None
) -> BottleneckVerdict:
    b = _Builder(p, where)
    names = _sol_names(p)
    sm, mem = p.sm_throughput_pct, p.memory_throughput_pct
    l1, l2, dram = p.l1_throughput_pct, p.l2_throughput_pct, p.dram_throughput_pct
    peak_mem, peak_comp = _peak_pcts(p, peaks or [], b)
    if sm is None and peak_comp is not None:
        sm, names["sm"] = peak_comp, "achieved_flop_rate_pct_of_peak"
    if mem is None and peak_mem is not None:
        mem, names["mem"] = peak_mem, "achieved_dram_bandwidth_pct_of_peak"
        dram, names["dram"] = peak_mem, "achieved_dram_bandwidth_pct_of_peak"
    for k, v in (isa or {}).items():
        if isinstance(v, (int, float, str)):
            b.add(f"isa.{k}", float(v) if isinstance(v, int) else v, "ISA fact (context)", "kernelpilot isa")
    if (sm is None) != (mem is None) and (peak_mem is not None or peak_comp is not None):
        # One side from a cited peak, the other unmeasured: classify on the known side, say so,
        # and lower the confidence.
        if sm is None:
            sm, b.partial = 0.0, ["compute percent unknown (no FLOP counters or compute peak): treated as 0"]
        else:
            mem, b.partial = 0.0, ["memory percent unknown (no DRAM bytes or bandwidth peak): treated as 0"]
    missing: list[str] = []
    if sm is None or mem is None:
        missing = [m for m in p.missing] or ["sm/memory speed-of-light percentages"]
        return BottleneckVerdict(
            kernel=p.kernel,
            launch_id=p.launch_id,
            verdict="unknown",
            confidence=0.0,
            evidence=b.ev,
            next_measurements=[
                "kernelpilot profile run --mode roofline -- <program> (ncu SOL percentages), or give "
                "cited peaks "
                "(peaks_json) with DRAM bytes and FLOP counters for rocprofv3 profiles"
            ],
            summary="not enough data: speed-of-light percentages (or cited peaks with bytes/FLOPs) are "
            "missing",
            missing=missing,
        )
    stalls = {k: v for k, v in p.warp_stalls.items() if k != "selected"}
    stall_total = sum(stalls.values())
    top_stalls = sorted(stalls.items(), key=lambda kv: -kv[1])[:3]
    waves = _f(p, "launch__waves_per_multiprocessor")
    occ = p.achieved_occupancy_pct
    pipes = {k: _f(p, n) for k, n in _PIPES.items()}
    pipes_known = {k: v for k, v in pipes.items() if v is not None}
    top_pipe = max(pipes_known.items(), key=lambda kv: kv[1]) if pipes_known else None
    top_unit = max(x for x in (sm, mem, l1 or 0.0, l2 or 0.0, dram or 0.0))

    def sol_evidence(which: tuple[str, ...], threshold: str) -> None:
        vals = {"sm": sm, "mem": mem, "l1": l1, "l2": l2, "dram": dram}
        for w in which:
            b.add(names[w], vals[w], threshold)

    def stall_evidence() -> None:
        for r, v in top_stalls:
            share = v / stall_total if stall_total else 0.0
            b.add(
                f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio",
                v,
                f"top stall reason ({100 * share:.0f}% of {stall_total:.1f} stalled warps per issue)",
            )

    # 1. too little parallelism
    few_blocks = waves is not None and waves < PARALLELISM_WAVES
    low_occ = occ is not None and occ < LOW_OCCUPANCY_PCT
    if max(sm, mem) < LEANING_PCT and (few_blocks or low_occ):
        sol_evidence(("sm", "mem"), f"< {LEANING_PCT:g} (%): no unit is busy")
        b.add("launch__waves_per_multiprocessor", waves, f"< {PARALLELISM_WAVES:g}: fewer blocks than SMs")
        b.add("launch__grid_size", _f(p, "launch__grid_size"), "blocks launched")
        b.add(
            "device__attribute_multiprocessor_count", _f(p, "device__attribute_multiprocessor_count"), "SMs"
        )
        b.add(
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            occ,
            f"< {LOW_OCCUPANCY_PCT:g} (%) achieved occupancy",
        )
        stall_evidence()
        return _verdict(
            p,
            "latency_bound",
            None,
            0.85,
            b,
            [
                "raise parallelism: more blocks (grid >= a few waves of SMs) or more independent work per "
                "thread (ILP)",
                "kernelpilot profile hotspots <source page>: a 'wait'/'long_scoreboard' chain on one line "
                "is a "
                "dependent chain",
                "kernelpilot isa occupancy: registers/shared memory per block vs occupancy limits",
            ],
            "too little parallelism: the GPU is mostly idle; each warp waits on its own dependent chain",
        )

    # 2. compute
    if (top_pipe is not None and top_pipe[1] >= COMPUTE_PIPE_PCT) or (
        top_pipe is None and sm >= BOUND_PCT and sm > mem + 10.0
    ):
        sol_evidence(("sm", "mem"), f"compute SOL >= {BOUND_PCT:g} (%) and above memory SOL")
        if top_pipe is not None:
            b.add(
                _PIPES[top_pipe[0]],
                top_pipe[1],
                f">= {COMPUTE_PIPE_PCT:g} (%): busiest pipe is {top_pipe[0]}",
            )
        for prec, rate in sorted(p.flop_per_s.items(), key=lambda kv: -kv[1])[:2]:
            if rate > 0:
                b.add(f"flop_per_s.{prec}", rate, "achieved (context)")
        conf = 0.9 if max(sm, top_pipe[1] if top_pipe else 0.0) >= HIGH_PCT else 0.7
        return _verdict(
            p,
            "compute_bound",
            None,
            conf,
            b,
            [
                "compare achieved FLOP/s with the cited peak (kernelpilot roofline) to see the headroom",
                "sm__pipe_*_cycles_active per pipe (ncu ComputeWorkloadAnalysis) to find the saturated pipe",
                "kernelpilot isa mix: are the intended tensor/FMA instructions there, at the widest form?",
            ],
            f"compute-bound: SM {sm:.0f}% of peak"
            + (f", {top_pipe[0]} pipe {top_pipe[1]:.0f}%" if top_pipe else ""),
        )

    # 3. synchronization
    sync = stalls.get("barrier", 0.0) + stalls.get("membar", 0.0)
    if stall_total and sync / stall_total >= SYNC_STALL_SHARE and top_unit < HIGH_PCT:
        b.add(
            "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
            stalls.get("barrier", 0.0),
            f"barrier+membar >= {100 * SYNC_STALL_SHARE:.0f}% of stalls "
            f"(here {100 * sync / stall_total:.0f}% of "
            f"{stall_total:.1f})",
        )
        if stalls.get("membar"):
            b.add(
                "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
                stalls["membar"],
                "memory barriers",
            )
        stall_evidence()
        sol_evidence(("sm", "mem", "l1"), f"< {HIGH_PCT:g} (%): no unit saturated")
        return _verdict(
            p,
            "sync_bound",
            None,
            0.6,
            b,
            [
                "kernelpilot profile hotspots: stall samples on BAR.SYNC / MEMBAR lines",
                "kernelpilot isa mix: barriers per loop iteration; replace shared-memory tree steps by "
                "warp shuffles",
                "check l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum for the shared-memory part",
            ],
            "synchronization-bound: warps wait at barriers a large share of the time",
        )

    # 4. memory
    mem_stall = sum(stalls.get(r, 0.0) for r in _MEM_STALLS)
    mem_dominant = bool(stall_total) and mem_stall / stall_total >= 0.5
    if mem >= BOUND_PCT or (mem >= LEANING_PCT and mem > sm and mem_dominant):
        levels = {"dram": dram or 0.0, "l2": l2 or 0.0, "l1_shared": l1 or 0.0}
        busiest = max(levels.values())
        level = (
            "dram" if levels["dram"] >= DRAM_SHARE_OF_TOP * busiest else max(levels, key=lambda k: levels[k])
        )
        sol_evidence(
            ("mem", "sm"),
            f"memory SOL >= {BOUND_PCT:g} (%)"
            if mem >= BOUND_PCT
            else f"memory SOL {LEANING_PCT:g}-{BOUND_PCT:g} (%) with memory stalls dominant",
        )
        sol_evidence(
            ("dram", "l2", "l1"),
            f"level = DRAM if within {DRAM_SHARE_OF_TOP:g}x of the busiest, else busiest",
        )
        stall_evidence()
        if level == "l2":
            for op in ("ld", "st"):
                b.add(
                    f"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_{op}.ratio",
                    _f(p, f"l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_{op}.ratio"),
                    "sectors per request: 4 = coalesced 4-byte access, up to 32 = one sector per thread",
                )
        if level == "l1_shared":
            b.add(
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                _f(p, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
                "shared-memory bank conflicts",
            )
            b.add(
                "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
                _f(p, "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"),
                "LSU pipe utilization (%)",
            )
        if p.bytes_dram() is not None:
            b.add(
                "dram__bytes_read.sum + dram__bytes_write.sum",
                p.bytes_dram(),
                "bytes moved (compare with the minimum)",
            )
        conf = 0.9 if mem >= HIGH_PCT else (0.75 if mem >= BOUND_PCT else 0.55)
        nxt = {
            "dram": [
                "compare DRAM bytes with the algorithmic minimum (each input read once, output written once)",
                "if equal and SOL DRAM >= 80%: the kernel is at the memory roof; fuse or reduce bytes "
                "(precision)",
                "kernelpilot profile hotspots: long_scoreboard lines are the loads to fix",
            ],
            "l2": [
                "sectors per request of global loads/stores (ncu MemoryWorkloadAnalysis_Tables): uncoalesced "
                "access shows far above 4 per request",
                "kernelpilot profile hotspots: lines with drain/lg stalls",
                "L2 hit rate vs DRAM throughput: reuse that stays in L2",
            ],
            "l1_shared": [
                "shared-memory bank conflicts (l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum)",
                "kernelpilot isa mix: vector width of shared/global loads (LDS.128, LDG.128)",
                "register tiling to reuse operands and cut L1/shared traffic per FLOP",
            ],
        }[level]
        return _verdict(
            p,
            "memory_bound",
            level,
            conf,
            b,
            nxt,
            f"memory-bound at {level}: memory SOL {mem:.0f}%, {level} {levels[level]:.0f}%",
        )

    # 5. latency (neither roof reached)
    sol_evidence(("sm", "mem"), f"< {BOUND_PCT:g} (%) on both sides: latency (ncu SOL rule)")
    b.add(
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        _f(p, "smsp__issue_active.avg.pct_of_peak_sustained_active"),
        "issue slots busy (%)",
    )
    b.add("sm__warps_active.avg.pct_of_peak_sustained_active", occ, "achieved occupancy (%)")
    stall_evidence()
    local = (_f(p, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") or 0.0) + (
        _f(p, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum") or 0.0
    )
    if local > 0:
        b.add("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum + _st.sum", local, "> 0: local-memory traffic")
    return _verdict(
        p,
        "latency_bound",
        None,
        0.6,
        b,
        [
            "kernelpilot profile hotspots: which lines hold the long_scoreboard / lg_throttle stalls",
            "kernelpilot isa resources: spills / stack frame (local memory) and registers",
            "more independent memory operations in flight per warp (unrolling, vector loads, prefetch)",
        ],
        "latency-bound: neither compute nor memory is near its roof; warps wait on dependencies"
        + (" (local-memory traffic present)" if local > 0 else ""),
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
        from kernelpilot.profile.att.diagnose import att_verdict

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
            res = ProfileResult.model_validate_json(req.profile_json or "")
        except ValueError as exc:
            raise InvalidArgumentError(
                f"profile_json is not a profile result: {str(exc)[:300]}",
                "pass the JSON printed by `kernelpilot profile parse --json`",
            ) from None
        where_base = res.path or "profile_json"
    peaks: list[CitedPeak] = []
    if req.peaks_json:
        try:
            peaks = [CitedPeak.model_validate(x) for x in json.loads(req.peaks_json)]
        except (ValueError, TypeError) as exc:
            raise InvalidArgumentError(
                f"peaks_json is invalid: {str(exc)[:300]}",
                'give [{"metric":..,"value":..,"unit":"TB/s","citation":"..."}]',
            ) from None
    isa: dict[str, object] | None = None
    if req.isa_facts_json:
        try:
            isa = json.loads(req.isa_facts_json)
        except ValueError as exc:
            raise InvalidArgumentError(f"isa_facts_json is not JSON: {exc}", "give a JSON object") from None
        if not isinstance(isa, dict):
            raise InvalidArgumentError("isa_facts_json must be a JSON object", 'e.g. {"registers": 32}')
    kernels = [k for k in res.kernels if not req.kernel or req.kernel in k.kernel]
    verdicts = [
        classify_profile(k, f"{where_base} (launch ID {k.launch_id}, {k.source.split(' (')[0]})", peaks, isa)
        for k in kernels
    ]
    if req.att_dir is not None:
        from kernelpilot.profile.att.diagnose import att_verdict

        verdicts.append(att_verdict(req.att_dir))
    return ClassifyResult(verdicts=verdicts, warnings=list(res.warnings))
