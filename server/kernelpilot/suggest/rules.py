"""The lever table: which levers a bottleneck verdict points at, why, and where that is explained.

Each rule names its verdict, an a-priori weight (how often this lever is the first fix for that
verdict, a judgement stated in `why`), its risk, words that identify it in a history record's change
summary, and the document that explains the mechanism. Nothing here is a hardware number.
"""

from __future__ import annotations

from dataclasses import dataclass

BPG = "CUDA C++ Best Practices Guide"
BPG_URL = "https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html"
PG = "CUDA C++ Programming Guide"
PG_URL = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"


@dataclass(frozen=True)
class Lever:
    id: str
    lever_type: str  # memory | compute | latency | sync | issue | resources | measure
    verdicts: tuple[str, ...]
    title: str
    why: str
    weight: float
    risk: str  # low | medium | high
    risk_note: str
    keywords: tuple[str, ...]
    source: str
    memory_levels: tuple[str, ...] = ()  # empty: any


LEVERS: tuple[Lever, ...] = (
    # --- memory-bound: move fewer bytes, move them in fewer, wider, coalesced transactions ---
    Lever(
        "vectorize_loads",
        "memory",
        ("memory_bound",),
        "Widen global loads/stores to 128-bit (float4 / LDG.128 / tl.load of contiguous blocks)",
        "Fewer, wider memory instructions per byte cut instruction and LSU pressure; each access must be "
        "naturally aligned to its size (1, 2, 4, 8 or 16 bytes).",
        0.8,
        "low",
        "alignment and tail handling; reinterpret casts can break on odd sizes",
        ("vector", "float4", "ldg.128", "128-bit", "wide load", "vectoriz"),
        f"{PG}, 'Device Memory Accesses' (size and alignment requirement), {PG_URL}#device-memory-accesses",
        ("dram", "l2"),
    ),
    Lever(
        "coalesce_access",
        "memory",
        ("memory_bound",),
        "Make consecutive threads touch consecutive addresses (transpose via shared memory, SoA layout)",
        "Uncoalesced warps fetch more 32-byte sectors than they use, so DRAM moves bytes nobody reads.",
        0.75,
        "medium",
        "layout changes ripple into callers",
        ("coalesc", "layout", "soa", "transpose", "stride"),
        f"{BPG}, 'Coalesced Access to Global Memory', {BPG_URL}#coalesced-access-to-global-memory",
        ("dram", "l2"),
    ),
    Lever(
        "fuse_kernels",
        "memory",
        ("memory_bound",),
        "Fuse producer/consumer kernels so intermediates stay in registers/shared memory",
        "A memory-bound chain pays a full DRAM round trip per kernel; fusing removes the intermediate "
        "writes and re-reads (the argument of Triton's fused-softmax tutorial).",
        0.7,
        "medium",
        "bigger kernels raise register pressure; check occupancy after fusing",
        ("fus", "fold", "merge kernel", "epilogue"),
        "Triton tutorial 'Fused Softmax', https://triton-lang.org/main/getting-started/tutorials/"
        "02-fused-softmax.html",
    ),
    Lever(
        "reuse_on_chip",
        "memory",
        ("memory_bound",),
        "Tile for reuse: stage re-read data in shared memory / registers, order blocks for L2 locality",
        "If a byte is read from DRAM or L2 more than once, caching it on chip turns repeat traffic into "
        "shared-memory or register reads.",
        0.6,
        "medium",
        "shared-memory use can lower occupancy",
        ("tile", "tiling", "shared memory", "smem", "reuse", "swizzle", "l2 locality", "block order"),
        f"{BPG}, 'Shared Memory' and 'Shared Memory in Matrix Multiplication', {BPG_URL}#shared-memory",
        ("dram", "l2"),
    ),
    Lever(
        "fix_bank_conflicts",
        "memory",
        ("memory_bound",),
        "Remove shared-memory bank conflicts (pad rows by one word, or swizzle the layout)",
        "Bank conflicts serialise a warp's shared-memory access into several wavefronts.",
        0.75,
        "low",
        "padding costs a little shared memory",
        ("bank", "padding", "pad", "swizzle", "conflict"),
        f"{PG}, 'Shared Memory' (banks), {PG_URL}#shared-memory-5-x",
        ("l1_shared",),
    ),
    Lever(
        "narrower_storage",
        "memory",
        ("memory_bound",),
        "Store tensors in a narrower type (bf16/fp8/int8) and accumulate in fp32",
        "Halving element size halves the bytes a bandwidth-bound kernel must move.",
        0.4,
        "high",
        "changes numerics: the correctness tolerance must still pass",
        ("bf16", "fp16", "fp8", "int8", "half", "quantiz", "narrow"),
        f"{BPG}, 'Instruction Optimization' / precision trade-offs, {BPG_URL}#instruction-optimization",
    ),
    # --- compute-bound: do the arithmetic on faster units or do less of it ---
    Lever(
        "tensor_cores",
        "compute",
        ("compute_bound",),
        "Move the inner product onto tensor cores (mma/wgmma, tl.dot, cuBLAS/CUTLASS)",
        "Matrix units deliver several times the FMA pipe's rate for matrix-shaped work.",
        0.85,
        "medium",
        "operand layouts and tile shapes must match the MMA shapes",
        ("tensor core", "mma", "wgmma", "tl.dot", "cutlass", "cublas", "hmma"),
        f"{PG}, 'Warp Matrix Functions', {PG_URL}#wmma",
    ),
    Lever(
        "lower_precision_math",
        "compute",
        ("compute_bound",),
        "Compute in a faster precision (tf32/bf16/fp8 inputs with fp32 accumulation)",
        "Each halving of operand width roughly doubles peak matrix throughput on recent GPUs.",
        0.5,
        "high",
        "accuracy: re-run the correctness check with its tolerance",
        ("tf32", "bf16", "fp16", "fp8", "precision"),
        f"{PG}, 'Warp Matrix Functions' (element types), {PG_URL}#wmma",
    ),
    Lever(
        "register_tiling",
        "compute",
        ("compute_bound",),
        "Larger per-thread/per-warp tiles (register blocking) to raise FLOPs per load",
        "More outputs per thread reuse each loaded operand more times, so the math pipes stay fed.",
        0.6,
        "medium",
        "register pressure: watch for spills and occupancy drops",
        ("tile", "block size", "register block", "blocking", "BLOCK_M", "BLOCK_N"),
        f"{BPG}, 'Shared Memory in Matrix Multiplication', "
        f"{BPG_URL}#shared-memory-in-matrix-multiplication-c-ab",
    ),
    Lever(
        "cheaper_instructions",
        "compute",
        ("compute_bound",),
        "Cut instruction cost: hoist index math, strength-reduce div/mod, use fast intrinsics",
        "When the pipes are busy with non-essential integer or special-function work, removing it "
        "frees issue slots for the useful math.",
        0.45,
        "low",
        "fast-math intrinsics change rounding",
        ("intrinsic", "fast math", "__expf", "strength", "index math", "div", "mod"),
        f"{BPG}, 'Instruction Optimization', {BPG_URL}#instruction-optimization",
    ),
    # --- latency-bound: more independent work in flight ---
    Lever(
        "raise_occupancy",
        "latency",
        ("latency_bound",),
        "Raise occupancy: cap registers (__launch_bounds__/maxnreg, num_warps) or shrink shared memory",
        "Latency is hidden by switching among resident warps; too few warps leave the pipes idle.",
        0.7,
        "medium",
        "capping registers can cause spills (check `isa resources` after)",
        ("occupancy", "launch_bounds", "maxrreg", "maxnreg", "num_warps", "registers"),
        f"{BPG}, 'Occupancy', {BPG_URL}#occupancy",
    ),
    Lever(
        "increase_ilp",
        "latency",
        ("latency_bound",),
        "More independent work per thread (unroll, several elements per thread, software pipelining)",
        "Instruction-level parallelism hides latency without more warps (Volkov, 'Better Performance at "
        "Lower Occupancy', GTC 2010).",
        0.65,
        "medium",
        "more registers per thread",
        ("ilp", "unroll", "pipelin", "elements per thread", "num_stages", "prefetch"),
        "V. Volkov, 'Better Performance at Lower Occupancy', GTC 2010, "
        "https://www.nvidia.com/content/gtc-2010/pdfs/2238_gtc2010.pdf",
    ),
    Lever(
        "launch_config",
        "latency",
        ("latency_bound",),
        "Retune the launch: block size, grid size (full waves over all SMs), split-K / persistent blocks",
        "A grid that leaves SMs idle or a partial last wave caps achieved throughput.",
        0.55,
        "low",
        "best configuration differs per shape: keep the task's shapes in the eval",
        ("block size", "grid", "launch config", "wave", "persistent", "split-k", "autotun"),
        f"{BPG}, 'Thread and Block Heuristics', {BPG_URL}#thread-and-block-heuristics",
    ),
    Lever(
        "cuda_graphs",
        "latency",
        ("latency_bound",),
        "Batch many small launches (CUDA graphs, fusing tiny kernels)",
        "Launch overhead dominates kernels of a few microseconds; graphs replay launches cheaply.",
        0.4,
        "low",
        "graph capture needs static shapes and addresses",
        ("graph", "launch overhead", "cudagraph"),
        f"{PG}, 'CUDA Graphs', {PG_URL}#cuda-graphs",
    ),
    # --- synchronization-bound ---
    Lever(
        "fewer_barriers",
        "sync",
        ("sync_bound",),
        "Remove or merge __syncthreads phases (double-buffer shared memory, split independent work)",
        "Each block-wide barrier stalls all warps until the slowest arrives.",
        0.7,
        "medium",
        "a missing barrier is a race: run the correctness check several times",
        ("barrier", "syncthreads", "bar.sync", "double buffer"),
        f"{PG}, 'Synchronization Functions', {PG_URL}#synchronization-functions",
    ),
    Lever(
        "warp_shuffles",
        "sync",
        ("sync_bound",),
        "Replace shared-memory reductions/exchanges with warp shuffles (__shfl_*_sync, tl.reduce)",
        "Shuffles exchange registers within a warp without shared memory or block barriers.",
        0.65,
        "low",
        "needs warp-synchronous code with full masks",
        ("shuffle", "shfl", "warp reduce", "warp-level"),
        "NVIDIA blog 'Faster Parallel Reductions on Kepler', "
        "https://developer.nvidia.com/blog/faster-parallel-reductions-kepler/",
    ),
    Lever(
        "aggregate_atomics",
        "sync",
        ("sync_bound",),
        "Aggregate atomics (warp-aggregated, per-block partials then one global atomic)",
        "Contended atomics to one address serialise; aggregating cuts their number by up to 32x.",
        0.6,
        "medium",
        "changes floating-point summation order",
        ("atomic", "aggregat", "contention"),
        "NVIDIA blog 'CUDA Pro Tip: Optimized Filtering with Warp-Aggregated Atomics', "
        "https://developer.nvidia.com/blog/cuda-pro-tip-optimized-filtering-warp-aggregated-atomics/",
    ),
    # --- from ISA facts, any verdict ---
    Lever(
        "remove_spills",
        "resources",
        ("compute_bound", "memory_bound", "latency_bound", "sync_bound", "unknown"),
        "Remove register spills (smaller tiles, fewer live values, raise the register cap)",
        "Spilled values go to local memory, which lives in device memory: extra traffic and latency.",
        0.9,
        "low",
        "raising the cap may lower occupancy",
        ("spill", "local memory", "maxrreg", "register pressure"),
        f"{BPG}, 'Local Memory', {BPG_URL}#local-memory",
    ),
    # --- named by root-cause rules only (kernelpilot.bottleneck.rules), never by the verdict table ---
    # issue- and latency-bound reductions and selection (kernelpilot.bottleneck.rules.issue); playbook
    # sections: playbooks/triton.md R1-R8, playbooks/cuda.md R1-R8, playbooks/hip.md R1
    Lever(
        "fewer_instructions",
        "issue",
        (),
        "Cut warp instructions per element: 32-bit keys and math, hoisted index math, no per-element "
        "compare/select chains",
        "An issue-bound kernel (issue slots busy, no pipe saturated) runs as fast as its instruction count "
        "allows; every instruction removed per element is time removed.",
        0.6,
        "low",
        "integer tricks must keep the exact ordering and tie rules of the reference",
        ("instruction count", "fewer instructions", "32-bit", "index math", "hoist", "sass count"),
        f"{PG}, 'Arithmetic Instructions' (throughput per clock per multiprocessor), "
        f"{PG_URL}#arithmetic-instructions",
    ),
    Lever(
        "cancel_softmax_denominator",
        "issue",
        (),
        "Select on the logits, then softmax over the k selected only (renormalization cancels the "
        "full-row denominator)",
        "softmax is monotone per row, so top-k of the logits is top-k of the probabilities, and the "
        "renormalized weights of the k selected are softmax over those k logits: the full-row exp, sum "
        "and divide go (Triton's triton_kernels top-k applies softmax to the selected values only).",
        0.8,
        "medium",
        "only when the weights are renormalized over the k selected (not for un-renormalized top-k "
        "probabilities); ties must still follow the reference's rule",
        ("denominator", "renormaliz", "softmax over selected", "logits top-k", "skip softmax"),
        "triton-lang/triton python/triton_kernels/triton_kernels/topk_details/_topk_forward.py "
        "(APPLY_SOFTMAX on the selected values), https://github.com/triton-lang/triton/blob/main/python/"
        "triton_kernels/triton_kernels/topk_details/_topk_forward.py",
    ),
    Lever(
        "packed_key_selection",
        "issue",
        (),
        "Pack value and index into one integer key (monotone float->int transform, index in the low "
        "bits) so each selection step is one max/min",
        "A (value, index) pair costs two shuffles and a compare/select chain per step; one integer key "
        "whose order is the value's order (ties by index) costs one shuffle and one integer max.",
        0.75,
        "medium",
        "the key must keep the reference's tie rule (lower index wins: store the complemented index) "
        "and the value bits the output needs",
        ("packed key", "pack", "key", "float as int", "radix key", "index in low bits"),
        "triton-lang/triton _topk_forward.py (fpval_to_key, indx_to_key, key << 16 | index), "
        "https://github.com/triton-lang/triton/blob/main/python/triton_kernels/triton_kernels/topk_details/"
        "_topk_forward.py; CUB radix key twiddling, https://nvidia.github.io/cccl/cub/api/"
        "classcub_1_1BlockRadixSort.html",
    ),
    Lever(
        "warp_selection_rounds",
        "issue",
        (),
        "k rounds of a warp-wide max (or min) with knock-out of the winner, instead of per-element "
        "compare/select insertion",
        "For small k over a row spread across lanes, each round is a log2(lanes) shuffle tree plus one "
        "knock-out, independent of the row length per lane (vLLM / TensorRT-LLM topkGatingSoftmax).",
        0.6,
        "low",
        "k rounds serialize: for large k a sorting network or radix select wins",
        ("k rounds", "knock-out", "knockout", "warp max", "argmax rounds", "butterfly"),
        "vllm-project/vllm csrc/moe/topk_softmax_kernels.cu (topkGatingSoftmax: butterfly argmax, winner "
        "set to a sentinel, k iterations), https://github.com/vllm-project/vllm/blob/main/csrc/moe/"
        "topk_softmax_kernels.cu",
    ),
    Lever(
        "network_selection",
        "issue",
        (),
        "Bitonic / tournament / radix selection for larger k or long rows (tl.topk + tl.bitonic_merge, CUB "
        "WarpMergeSort / BlockRadixSort)",
        "A sorting network has a fixed, branch-free compare-exchange schedule; merging per-chunk top-k "
        "lists keeps only k candidates live per row.",
        0.45,
        "medium",
        "more registers per thread; for k of 1-8 the warp rounds are usually cheaper",
        ("bitonic", "tournament", "sorting network", "radix select", "merge sort", "tl.topk"),
        "CUB BlockRadixSort, https://nvidia.github.io/cccl/cub/api/classcub_1_1BlockRadixSort.html; "
        "triton-lang/triton _topk_forward.py (tl.topk, tl.bitonic_merge)",
    ),
    Lever(
        "row_mapping",
        "issue",
        (),
        "Match the row-to-thread mapping to the row length: lane-per-row, a few lanes per row, warp-per-row "
        "or block-per-row",
        "Short rows reduced by a whole warp spend log2(32) shuffle steps and idle lanes per row; a row "
        "held in one thread's registers needs no cross-lane step, long rows need a block.",
        0.6,
        "medium",
        "registers per thread grow with the elements a thread holds; coalescing of the loads must stay",
        ("lane-per-row", "warp-per-row", "block-per-row", "rows per warp", "threads per row", "mapping"),
        "vllm-project/vllm csrc/moe/topk_softmax_kernels.cu (THREADS_PER_ROW, ROWS_PER_WARP), "
        "https://github.com/vllm-project/vllm/blob/main/csrc/moe/topk_softmax_kernels.cu",
    ),
    Lever(
        "fewer_shuffle_steps",
        "issue",
        (),
        "Shorten cross-lane reductions: reduce in registers first, then a log2(lanes) shuffle tree over "
        "only the lanes that hold the row (or shared memory for block-wide steps)",
        "Each shuffle step is an MIO round trip the next step depends on; fewer lanes per row and more "
        "elements per lane cut the chain, and `width` keeps the tree inside the row's lanes.",
        0.55,
        "low",
        "needs full masks and the same width on every lane of the group",
        ("shuffle", "shfl", "butterfly", "warp reduce", "xor", "fewer steps"),
        f"{PG}, 'Warp Shuffle Functions', {PG_URL}#warp-shuffle-functions; CUB WarpReduce, "
        "https://nvidia.github.io/cccl/cub/api/classcub_1_1WarpReduce.html",
    ),
    Lever(
        "avoid_replicated_epilogue",
        "issue",
        (),
        "Triton: keep the epilogue off values that carry a row reduction's layout (reduce first, or move "
        "them to a layout with one owner per element)",
        "A tensor derived from tl.max/tl.sum along a row keeps the parent's SliceLayout: every lane that "
        "held part of the row holds a copy, so the epilogue on it runs once per copy.",
        0.55,
        "low",
        "layout changes can add shared-memory round trips; count the SASS before and after",
        ("replicated", "layout", "slicelayout", "convert_layout", "epilogue"),
        "triton-lang/triton python/triton/experimental/gluon/language/_layouts.py (SliceLayout, "
        "convert_layout), https://github.com/triton-lang/triton/blob/main/python/triton/experimental/gluon/"
        "language/_layouts.py",
    ),
    Lever(
        "registerize_local_array",
        "resources",
        (),
        "Keep the local array in registers (compile-time indices, full unrolling) or move it to "
        "shared memory",
        "A dynamically indexed per-thread array lives in local memory (device memory behind L1): every "
        "access "
        "is a load/store that registers would not need.",
        0.9,
        "low",
        "unrolling grows code size and register count",
        ("local array", "registeriz", "unroll", "constant index", "stack frame"),
        f"{BPG}, 'Local Memory', {BPG_URL}#local-memory",
    ),
    Lever(
        "stop_or_fuse",
        "measure",
        (),
        "At the roofline: stop optimizing this kernel alone, or fuse it with its neighbours",
        "A kernel at its bandwidth or tensor roof has no speed-up left in isolation; only moving fewer bytes "
        "overall (fusion, narrower storage) helps.",
        1.0,
        "low",
        "none for stopping; fusion has its own register-pressure risk",
        ("stop", "roofline", "at roof"),
        "Nsight Compute Kernel Profiling Guide, 'GPU Speed Of Light' (a unit above 80% of peak is "
        "saturated), "
        "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html",
    ),
    Lever(
        "measure_first",
        "measure",
        ("unknown",),
        "Measure before changing code: the bottleneck is not classified yet",
        "Without a verdict any lever is a guess; collect the missing measurements first.",
        0.5,
        "low",
        "none: no code change",
        ("profile", "measure"),
        "kernelpilot bottleneck verdict 'unknown' (its next_measurements list)",
    ),
)
