"""Turn parsed ncu pages into `KernelProfile`s: pick the metrics by name (with aliases), compute FLOPs
per precision and FLOP/s, and list every normalized field the input could not give in `missing`."""

from __future__ import annotations

from kernelpilot.profile import metrics as M
from kernelpilot.profile.models import KernelProfile, PipeUsage
from kernelpilot.profile.ncu_csv import (
    INST_EXECUTED,
    ISSUE_ACTIVE,
    SM_CYCLES_ACTIVE,
    RawKernel,
    pipes_from_raw,
)


def _num(values: dict[str, float | str | None], names: tuple[str, ...]) -> float | None:
    for n in names:
        v = values.get(n)
        if isinstance(v, float):
            return v
    return None


def profile_from_raw(k: RawKernel, include_raw: bool = False, source: str = "ncu raw page") -> KernelProfile:
    v = k.values
    missing: list[str] = []

    def need(field: str, names: tuple[str, ...]) -> float | None:
        x = _num(v, names)
        if x is None:
            why = "n/a" if any(n in v for n in names) else "absent"
            missing.append(f"{field} ({' | '.join(names)} {why})")
        return x

    duration = need("duration_ns", M.DURATION)
    rd = need("dram_bytes_read", M.DRAM_READ)
    wr = need("dram_bytes_write", M.DRAM_WRITE)
    flops: dict[str, float] = {}
    derived: list[str] = []
    cycles = _num(v, (M.SMSP_CYCLES,))
    for prec, (add, mul, fma) in M.SCALAR_FLOP_OPS.items():
        a, m, f = (_num(v, (x,)) for x in (add, mul, fma))
        if (a is None or m is None or f is None) and cycles is not None:
            # full set: counts are stored as smsp rates;
            # count = sum.per_cycle_elapsed x smsp__cycles_elapsed.avg
            rates = [_num(v, (M.smsp_rate(x),)) for x in (add, mul, fma)]
            if all(r is not None for r in rates):
                a, m, f = (r * cycles for r in rates if r is not None)
                derived.append(prec)
        if a is None or m is None or f is None:
            if any(x in v for x in (add, mul, fma)) or prec == "fp32":
                missing.append(f"flop_count.{prec} ({add}, {mul}, {fma})")
            continue
        flops[prec] = a + m + 2.0 * f
    for prec, name in M.TENSOR_FLOP_OPS.items():
        t = _num(v, (name,))
        if t is not None:
            flops[prec] = t
    per_s = {p: x / (duration * 1e-9) for p, x in flops.items()} if duration else {}
    sol = {f: need(f, names) for f, names in M.SOL.items()}
    other = {f: _num(v, names) for f, names in M.OTHER.items()}
    smem_s = _num(v, (M.SHARED_STATIC,))
    smem_d = _num(v, (M.SHARED_DYNAMIC,))
    smem = None if smem_s is None and smem_d is None else (smem_s or 0.0) + (smem_d or 0.0)
    stalls = {
        name[len(M.STALL_PREFIX) : -len(M.STALL_SUFFIX)]: val
        for name, val in v.items()
        if name.startswith(M.STALL_PREFIX) and name.endswith(M.STALL_SUFFIX) and isinstance(val, float)
    }
    passes = _num(v, (M.PASSES,))
    if derived:
        source += (
            f" (flop_count {', '.join(derived)} derived from per-cycle rates x smsp__cycles_elapsed.avg)"
        )
    return KernelProfile(
        kernel=k.kernel,
        launch_id=k.launch_id,
        profiler="ncu",
        source=source,
        device=k.device,
        grid=k.grid,
        block=k.block,
        duration_ns=duration,
        dram_bytes_read=rd,
        dram_bytes_write=wr,
        flop_count=flops,
        flop_per_s=per_s,
        sm_throughput_pct=sol["sm_throughput_pct"],
        memory_throughput_pct=sol["memory_throughput_pct"],
        l1_throughput_pct=sol["l1_throughput_pct"],
        l2_throughput_pct=sol["l2_throughput_pct"],
        dram_throughput_pct=sol["dram_throughput_pct"],
        achieved_occupancy_pct=other["achieved_occupancy_pct"],
        theoretical_occupancy_pct=other["theoretical_occupancy_pct"],
        registers_per_thread=other["registers_per_thread"],
        shared_mem_per_block_bytes=smem,
        l1_hit_rate_pct=other["l1_hit_rate_pct"],
        l2_hit_rate_pct=other["l2_hit_rate_pct"],
        warp_stalls=stalls,
        inst_executed=_num(v, (INST_EXECUTED,)),
        issue_active_pct=_num(v, (ISSUE_ACTIVE,)),
        sm_cycles_active=_num(v, (SM_CYCLES_ACTIVE,)),
        pipes=[PipeUsage.model_validate(row) for row in pipes_from_raw(v)],
        passes=int(passes) if passes is not None else None,
        missing=missing,
        raw_metrics=dict(v) if include_raw else {},
        raw_units=dict(k.units) if include_raw else {},
    )


# details page: normalized field -> (section, metric name)
_DETAILS: dict[str, tuple[str, str]] = {
    "duration_ns": ("GPU Speed Of Light Throughput", "Duration"),
    "sm_throughput_pct": ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"),
    "memory_throughput_pct": ("GPU Speed Of Light Throughput", "Memory Throughput"),
    "l1_throughput_pct": ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"),
    "l2_throughput_pct": ("GPU Speed Of Light Throughput", "L2 Cache Throughput"),
    "dram_throughput_pct": ("GPU Speed Of Light Throughput", "DRAM Throughput"),
    "achieved_occupancy_pct": ("Occupancy", "Achieved Occupancy"),
    "theoretical_occupancy_pct": ("Occupancy", "Theoretical Occupancy"),
    "registers_per_thread": ("Launch Statistics", "Registers Per Thread"),
    "l1_hit_rate_pct": ("Memory Workload Analysis", "L1/TEX Hit Rate"),
    "l2_hit_rate_pct": ("Memory Workload Analysis", "L2 Hit Rate"),
}


def profile_from_details(k: RawKernel, include_raw: bool = False) -> KernelProfile:
    v = k.values
    got: dict[str, float | None] = {}
    missing: list[str] = []
    for f, (sec, name) in _DETAILS.items():
        x = v.get(f"{sec}/{name}")
        got[f] = x if isinstance(x, float) else None
        if got[f] is None and f in ("duration_ns", "sm_throughput_pct", "memory_throughput_pct"):
            missing.append(f"{f} ({sec} / {name})")
    missing.append("dram_bytes_read, dram_bytes_write, flop_count (not on the details page: use --page raw)")
    s = v.get("Launch Statistics/Static Shared Memory Per Block")
    d = v.get("Launch Statistics/Dynamic Shared Memory Per Block")
    smem = None
    if isinstance(s, float) or isinstance(d, float):
        smem = (s if isinstance(s, float) else 0.0) + (d if isinstance(d, float) else 0.0)
    return KernelProfile(
        kernel=k.kernel,
        launch_id=k.launch_id,
        profiler="ncu",
        source="ncu details page",
        device=k.device,
        grid=k.grid,
        block=k.block,
        duration_ns=got["duration_ns"],
        sm_throughput_pct=got["sm_throughput_pct"],
        memory_throughput_pct=got["memory_throughput_pct"],
        l1_throughput_pct=got["l1_throughput_pct"],
        l2_throughput_pct=got["l2_throughput_pct"],
        dram_throughput_pct=got["dram_throughput_pct"],
        achieved_occupancy_pct=got["achieved_occupancy_pct"],
        theoretical_occupancy_pct=got["theoretical_occupancy_pct"],
        registers_per_thread=got["registers_per_thread"],
        shared_mem_per_block_bytes=smem,
        l1_hit_rate_pct=got["l1_hit_rate_pct"],
        l2_hit_rate_pct=got["l2_hit_rate_pct"],
        missing=missing,
        raw_metrics=dict(v) if include_raw else {},
        raw_units=dict(k.units) if include_raw else {},
    )
