#!/bin/bash
# Issue 24's acceptance rows still missing, in ONE device call (H100, torch with CUDA, nvidia-ml-py):
#   (1) the ~5 ms GEMM (12288^3 bf16): itself / +3 % / the reverse, 5 reps each, every verdict's wall <= 20 s;
#   (2) the 5 us memory-bound kernel (1 Mi fp32 y = 2x) with 8 allocations per side: itself / +3 % / the
#       reverse, 5 reps each, plus itself with B's inputs allocated first (is the allocation order what
#       moved the one-allocation self rows? docs/eval-design.md, "A self-compare that read regressed").
# GEMM first: its rows never fitted a device window before. Worst case by the timeouts: 30 + 10 + 530 + 10 s
# (under the 600 s of one call).
# Outputs under $OUT (the device tool's folder; else ./paired_next): bench log and JSON, nvidia-smi before and
# after, steps.log. The table (case, verdict, ratio, CI, wall, dropped for throttling) ends the log.
# Usage from the repository root: bash device/paired_bench_next.sh
# Needs kernelpilot's dependencies importable (pydantic, nvidia-ml-py): device/env.sh installs the wheels
# carried in .whl/ (name it in the call's carry). NVML is only read.
set -u
OUT=${OUT:-$PWD/paired_next}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
kp_log "start in $PWD"
kp_require "import torch, pydantic, kernelpilot.timing.compare; assert torch.cuda.is_available()" \
  "torch with a GPU, pydantic, kernelpilot"
timeout 10 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active \
  --format=csv > "$OUT/smi_before.csv" 2>&1 || kp_log "nvidia-smi failed"
kp_log "paired_bench: gemm12k then mem5us (8 allocations per side), 5 reps"
timeout -k 10 530 python3 bench/paired_bench.py --kernels gemm12k,mem5us --rotate 8 --reps 5 --b-first \
  --max-wall-s 8 --deadline-s 470 --out "$OUT/paired_bench_next.json" > "$OUT/paired_bench_next.log" 2>&1
kp_log "bench rc=$?"
timeout 10 nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv > "$OUT/smi_after.csv" 2>&1
echo "==== table"
sed -n '/^| kernel | case/,$p' "$OUT/paired_bench_next.log"
grep -E "^(deadline|gemm12k:|mem5us:)" "$OUT/paired_bench_next.log"
