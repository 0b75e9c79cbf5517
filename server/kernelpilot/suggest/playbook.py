"""Which playbook sections explain a lever, for the kernel's shape.

A lever id (kernelpilot.suggest.rules) is generic; the section that tells an agent *how* depends on the
language and on the kernel's shape. A loop-free kernel (elementwise: each thread loads a few values once)
has no loop iterations to pipeline, so `num_stages` (playbooks/triton.md L1) or cp.async pipelining
(playbooks/cuda.md L3) never apply to it; its latency is hidden by more elements per program (triton.md M1)
or per thread (cuda.md L2). The shape comes from the profile: global load instructions per thread
(`global_loads_per_thread`, evidence of the bottleneck rules), see `kernel_shape`.
"""

from __future__ import annotations

from typing import Any, Literal

Shape = Literal["loop", "loop_free"]
LOOP_FREE_LOADS = 8.0  # kernelpilot: a loop-free kernel issues a handful of global loads per thread

# lever -> (playbook file, section id, section title, shape it applies to: None = any)
SECTIONS: dict[str, tuple[tuple[str, str, str, Shape | None], ...]] = {
    "vectorize_loads": (
        ("triton.md", "M1", "Block size and contiguity hints for wide accesses", None),
        ("cuda.md", "M2", "128-bit vectorized loads and stores", None),
    ),
    "coalesce_access": (
        ("triton.md", "M1", "Block size and contiguity hints for wide accesses", None),
        ("cuda.md", "M1", "Coalesce global accesses", None),
    ),
    "fuse_kernels": (("triton.md", "M2", "Fusion", None), ("cuda.md", "M3", "Cut compulsory bytes", None)),
    "stop_or_fuse": (("triton.md", "M2", "Fusion", None), ("cuda.md", "M3", "Cut compulsory bytes", None)),
    "narrower_storage": (("cuda.md", "M3", "Cut compulsory bytes: fusion and storage precision", None),),
    "reuse_on_chip": (
        ("triton.md", "M3", "Tile reuse and L2 grouping (GEMM-like)", None),
        ("cuda.md", "M4", "Tiling for reuse (shared memory and registers)", None),
    ),
    "fix_bank_conflicts": (("cuda.md", "M6", "Shared-memory bank conflicts", None),),
    "remove_spills": (
        ("triton.md", "L2", "`num_warps` and occupancy", None),
        ("cuda.md", "M7", "Eliminate spills and local memory", None),
    ),
    "registerize_local_array": (("cuda.md", "M7", "Eliminate spills and local memory", None),),
    "tensor_cores": (
        ("triton.md", "C1", "Put the math on `tl.dot`", None),
        ("cuda.md", "C1", "Use the tensor cores", None),
    ),
    "lower_precision_math": (
        ("triton.md", "C4", "Lower-precision dot", None),
        ("cuda.md", "C3", "Lower-precision math", None),
    ),
    "register_tiling": (
        ("triton.md", "C2", "Autotune the tile space", "loop"),
        ("cuda.md", "M4", "Tiling for reuse (shared memory and registers)", None),
    ),
    "cheaper_instructions": (
        ("triton.md", "C3", "Cheaper epilogue and non-math work", None),
        ("cuda.md", "C4", "Cut non-math instructions", None),
    ),
    "raise_occupancy": (
        ("triton.md", "L2", "`num_warps` and occupancy", None),
        ("cuda.md", "L1", "Occupancy: registers, shared memory, block size", None),
    ),
    "increase_ilp": (
        ("triton.md", "M1", "Block size (more elements per program)", "loop_free"),
        ("triton.md", "L1", "`num_stages` (software pipelining)", "loop"),
        ("cuda.md", "L2", "Instruction-level parallelism", None),
        ("cuda.md", "L3", "Software pipelining with asynchronous copies", "loop"),
    ),
    "launch_config": (
        ("triton.md", "M1", "Block size (elements per program)", "loop_free"),
        ("triton.md", "L3", "Grid shape: split-K, stream-K, persistent programs", None),
        ("cuda.md", "L4", "Parallel decomposition: waves, tails, split-K, stream-K, persistent", None),
    ),
    "cuda_graphs": (("triton.md", "L4", "Launch overhead", None), ("cuda.md", "L5", "Launch overhead", None)),
    "fewer_barriers": (
        ("triton.md", "S1", "Reductions", None),
        ("cuda.md", "S1", "Fewer block barriers", None),
    ),
    "warp_shuffles": (
        ("triton.md", "S1", "Reductions", None),
        ("cuda.md", "S2", "Warp-level and hierarchical reductions", None),
    ),
    "fewer_instructions": (
        ("triton.md", "R1", "Count the instructions: the issue floor", None),
        ("cuda.md", "R1", "Count the instructions: the issue floor", None),
        ("hip.md", "R1", "Reductions and selection on wavefronts", None),
    ),
    "cancel_softmax_denominator": (
        ("triton.md", "R2", "Select on logits: renormalization cancels the softmax denominator", None),
        ("cuda.md", "R2", "Select on logits: renormalization cancels the softmax denominator", None),
    ),
    "packed_key_selection": (
        ("triton.md", "R3", "Value and index in one integer key", None),
        ("cuda.md", "R3", "Value and index in one integer key", None),
        ("hip.md", "R1", "Reductions and selection on wavefronts", None),
    ),
    "warp_selection_rounds": (
        ("triton.md", "R4", "k rounds of max with knock-out vs compare/select", None),
        ("cuda.md", "R4", "k rounds of warp-wide max with knock-out", None),
    ),
    "network_selection": (
        ("triton.md", "R5", "Bitonic / tournament selection", None),
        ("cuda.md", "R5", "Bitonic, tournament and radix selection", None),
    ),
    "row_mapping": (
        ("triton.md", "R6", "Lane-per-row vs warp-per-row: rows per program, lanes per row", None),
        ("cuda.md", "R6", "Lane-per-row, warp-per-row, block-per-row", None),
        ("hip.md", "R1", "Reductions and selection on wavefronts", None),
    ),
    "fewer_shuffle_steps": (
        ("triton.md", "R6", "Lane-per-row vs warp-per-row: rows per program, lanes per row", None),
        ("cuda.md", "R7", "Shuffle tree vs shared-memory reductions", None),
        ("hip.md", "R1", "Reductions and selection on wavefronts", None),
    ),
    "avoid_replicated_epilogue": (("triton.md", "R7", "Replicated epilogues after row reductions", None),),
    "aggregate_atomics": (
        ("triton.md", "S2", "Atomics and locks", None),
        ("cuda.md", "S3", "Atomics contention", None),
    ),
}
_SHAPE_WORDS = {"loop": "kernels with a loop only", "loop_free": "loop-free kernels"}


def kernel_shape(verdict: dict[str, Any]) -> tuple[Shape | None, str]:
    """(shape, why) from the causes' `global_loads_per_thread` evidence; (None, '') when not measured."""
    for cause in verdict.get("causes") or []:
        for ev in cause.get("evidence") or [] if isinstance(cause, dict) else []:
            if isinstance(ev, dict) and ev.get("metric") == "global_loads_per_thread":
                n = ev.get("value")
                if isinstance(n, (int, float)):
                    shape: Shape = "loop_free" if n <= LOOP_FREE_LOADS else "loop"
                    return shape, f"{n:.1f} global loads per thread"
    return None, ""


def sections(lever: str, shape: Shape | None) -> list[str]:
    """'playbooks/<file> <id>. <title>' for the lever; sections for the other shape are left out, and
    with an unknown shape each conditional section says which shape it is for."""
    out = []
    for book, sid, title, when in SECTIONS.get(lever, ()):
        if shape is not None and when is not None and when != shape:
            continue
        note = f" ({_SHAPE_WORDS[when]})" if when is not None and shape is None else ""
        out.append(f"playbooks/{book} {sid}. {title}{note}")
    return out


__all__ = ["LOOP_FREE_LOADS", "SECTIONS", "kernel_shape", "sections"]
