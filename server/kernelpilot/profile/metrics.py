"""Metric names: the minimal-pass roofline set for ncu and the aliases used to normalize profiles.

Names checked on the device (H100 SXM, ncu 2025.3.1, `ncu --query-metrics --chip gh100`, 2026-11-22).
FLOP accounting follows the Nsight Compute Kernel Profiling Guide, section "Roofline Charts"
(https://docs.nvidia.com/nsight-compute/ProfilingGuide/#roofline-charts): add + mul + 2 x fma thread
instructions per precision. Tensor `sm__ops_path_tensor_src_*` counts operations (2 per multiply-add):
measured on the device, a 4096^3 bf16 cuBLAS GEMM gave exactly 137,438,953,472 = 2*4096^3.
"""

from __future__ import annotations

DURATION = ("gpu__time_duration.sum",)
DRAM_READ = ("dram__bytes_read.sum",)
DRAM_WRITE = ("dram__bytes_write.sum",)

# precision -> (add, mul, fma) thread-instruction counters (predicated-on).
SCALAR_FLOP_OPS: dict[str, tuple[str, str, str]] = {
    p: tuple(f"sm__sass_thread_inst_executed_op_{c}{o}_pred_on.sum" for o in ("add", "mul", "fma"))  # type: ignore[misc]
    for p, c in (("fp32", "f"), ("fp16", "h"), ("fp64", "d"))
}
# precision -> tensor-pipe operation counter (Hopper names; 2 ops per MAC).
TENSOR_FLOP_OPS: dict[str, str] = {
    "tensor_bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "tensor_fp16": "sm__ops_path_tensor_src_fp16.sum",
    "tensor_tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "tensor_fp8": "sm__ops_path_tensor_src_fp8.sum",
    "tensor_fp64": "sm__ops_path_tensor_src_fp64.sum",
    "tensor_int8": "sm__ops_path_tensor_src_int8.sum",
}

# Speed-of-light headline: normalized field -> metric names accepted (first present wins).
SOL: dict[str, tuple[str, ...]] = {
    "sm_throughput_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory_throughput_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "l1_throughput_pct": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "l2_throughput_pct": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_throughput_pct": (
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
}

OTHER: dict[str, tuple[str, ...]] = {
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "theoretical_occupancy_pct": ("sm__maximum_warps_per_active_cycle_pct",),
    "registers_per_thread": ("launch__registers_per_thread",),
    "l1_hit_rate_pct": ("l1tex__t_sector_hit_rate.pct",),
    "l2_hit_rate_pct": ("lts__t_sector_hit_rate.pct",),
}
SMSP_CYCLES = "smsp__cycles_elapsed.avg"


def smsp_rate(sum_metric: str) -> str:
    """`sm__sass_thread_inst_executed_op_ffma_pred_on.sum` -> its full-set form
    `smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed`."""
    return "smsp__" + sum_metric[len("sm__") :] + ".per_cycle_elapsed"


SHARED_STATIC = "launch__shared_mem_per_block_static"
SHARED_DYNAMIC = "launch__shared_mem_per_block_dynamic"
PASSES = "profiler__replayer_passes"
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


def roofline_metrics(tensor: bool = True, sol: bool = True) -> list[str]:
    """The minimal metric set: duration, DRAM bytes, FLOPs by precision, and optionally the SOL headline.

    Replay passes measured on H100 / ncu 2025.3.1 (tests/fixtures/profile/ncu/roofline/subsets.txt): duration,
    DRAM bytes and scalar FLOP counters 1 pass each alone; SOL headline 10; tensor counters 7;
    duration+DRAM+FLOPs+SOL 11; everything 17 (vs 38 for --set full). launch__* come free with every profile.
    """
    names = [*DURATION, *DRAM_READ, *DRAM_WRITE]
    for ops in SCALAR_FLOP_OPS.values():
        names.extend(ops)
    if tensor:
        names.extend(TENSOR_FLOP_OPS.values())
    if sol:
        names.extend(v[0] for v in SOL.values())
    return names
