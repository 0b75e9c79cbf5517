#!/bin/bash
# Issue 32's instruction-issue floor on one GPU, in one device call (about 3 minutes, at most 4):
# bench/issue_bound.py on three Triton kernels (MoE top-k gating, warp-shuffle row log-sum-exp, fused
# qk-RMSNorm + RoPE): correctness, `kernelpilot time` cold + warm, the cubin, one ncu --set full launch with
# the per-pipe counters (--csv --page raw), and the static vs measured issue floors with the stop target.
# Usage from the repository root: bash bench/issue_bound_next.sh   (carry .whl; $OUT set by the device call)
# Files back (8): topk_gating_kernel.cubin, row_lse_kernel.cubin, qknorm_rope_kernel.cubin, gating_raw.csv,
# row_lse_raw.csv, rope_raw.csv, issue_bound.json (every number, the env, each step's error), steps.log
# (the run's output; the summary table ends it). They become tests/fixtures/roofline/issue_bound/.
set -u
OUT=${OUT:-$PWD/issue_bound_out}
mkdir -p "$OUT"
. bench/device_env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
kp_log "start in $PWD"
kp_require "import torch, triton, pydantic, kernelpilot.roofline.issue, kernelpilot.timing.core; \
assert torch.cuda.is_available()" "torch with a GPU, triton, pydantic, kernelpilot"
command -v ncu > /dev/null || kp_log "no ncu on PATH: the measured floors will be missing"
timeout -k 10 230 python3 bench/issue_bound.py --out "$OUT" >> "$OUT/steps.log" 2>&1
kp_log "bench rc=$?"
sed -n '/^== issue floors/,$p' "$OUT/steps.log"
