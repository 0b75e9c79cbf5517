#!/bin/bash
# Issue 32's instruction-issue floor on one GPU, in one device call (about 2 minutes, at most 4):
# bench/issue_bound.py on four Triton kernels (MoE top-k gating, row log-sum-exp + entropy, bitonic row sort:
# issue-bound; fused qk-RMSNorm + RoPE: memory-bound): correctness, `kernelpilot time` cold + warm, the cubin,
# one ncu --set full launch with the per-pipe counters (--csv --page raw), and the static vs measured issue
# floors with the stop target. Offline floors first: bench/issue_bound_offline.py (no GPU).
# Usage from the repository root: bash device/issue_bound_next.sh   (carry .whl; $OUT set by the device call)
# Files back (4): issue_bound_files.tgz (the four <kernel>.cubin, the four <name>_raw.csv and issue_bound.json:
# unpack with `tar -xzf issue_bound_files.tgz -C tests/fixtures/roofline/issue_bound/`), issue_bound.json
# (every number, the env, each step's error), steps.log (the run's output; the summary table ends it),
# imports.log.
set -u
OUT=${OUT:-$PWD/issue_bound_out}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
kp_log "start in $PWD"
kp_require "import torch, triton, pydantic, kernelpilot.roofline.issue, kernelpilot.timing.core; \
assert torch.cuda.is_available()" "torch with a GPU, triton, pydantic, kernelpilot"
command -v ncu > /dev/null || kp_log "no ncu on PATH: the measured floors will be missing"
WORK=$(mktemp -d /tmp/issue_bound.XXXXXX)
timeout -k 10 230 python3 bench/issue_bound.py --out "$WORK" >> "$OUT/steps.log" 2>&1
kp_log "bench rc=$?"
cp "$WORK/issue_bound.json" "$OUT/" 2> /dev/null || kp_log "no issue_bound.json"
tar -czf "$OUT/issue_bound_files.tgz" -C "$WORK" . && kp_log "bundled: $(ls "$WORK" | tr '\n' ' ')"
sed -n '/^== issue floors/,$p' "$OUT/steps.log"
