#!/bin/bash
# The timing regression check (bench/timing_vs_ncu.py) on this machine, in one device call (about 2-3 minutes):
# every kernel's cold figure against ncu gpu__time_duration, warm against CUPTI, CVs, as one table for the
# machine. Outputs under $OUT (else ./timing_vs_ncu_out): timing_vs_ncu.log (the table ends it),
# timing_vs_ncu.json (every row with its cold derivation), steps.log.
# Usage from the repository root: KP_MACHINE=<label> bash device/timing_vs_ncu_next.sh
# Needs kernelpilot's dependencies importable: device/env.sh installs the wheels carried in .whl/.
set -u
OUT=${OUT:-$PWD/timing_vs_ncu_out}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
kp_log "start in $PWD (machine ${KP_MACHINE:-unlabelled})"
kp_require "import torch, cupy, triton, pydantic, kernelpilot.timing.core; assert torch.cuda.is_available()" \
  "torch with a GPU, cupy, triton, pydantic, kernelpilot"
timeout -k 10 400 python3 bench/timing_vs_ncu.py --machine "${KP_MACHINE:-$(hostname)}" \
  --out "$OUT/timing_vs_ncu.json" > "$OUT/timing_vs_ncu.log" 2>&1
kp_log "bench rc=$?"
sed -n '/^== machine/,$p' "$OUT/timing_vs_ncu.log"
grep -E "^(ncu:|.*FAILED)" "$OUT/timing_vs_ncu.log"
