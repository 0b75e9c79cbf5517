#!/bin/bash
# Issue 23's read line on a GPU machine, in ONE device call: bench/workload_bench.py --mode read (the
# 100,035-kernel Kineto trace replicated from tests/fixtures/workload/h100_decode_trace.json), 5 runs.
# The reader decodes with msgspec; without it the json fallback is timed instead (slower, same result), so
# the script stops when msgspec is not importable. device/env.sh installs it and kernelpilot's other
# dependencies from the wheels carried in .whl/ (name it in the call's carry).
# Worst case by the timeouts: 30 + 300 s. Outputs under $OUT (the device tool's folder; else
# ./workload_read_next): steps.log, imports.log, read_bench.log (its last line is the figure).
# Usage from the repository root: bash device/workload_read_next.sh
set -u
OUT=${OUT:-$PWD/workload_read_next}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
kp_log "start in $PWD"
kp_require "import msgspec, pydantic, kernelpilot.workload.readers.kineto; print(msgspec.__version__)" \
  "msgspec, pydantic, kernelpilot"
kp_log "msgspec $(cat "$OUT/imports.log"); $(nproc) CPUs; $(python3 --version 2>&1)"
timeout -k 10 300 python3 bench/workload_bench.py --mode read --runs 5 > "$OUT/read_bench.log" 2>&1
kp_log "bench rc=$?"
tail -3 "$OUT/read_bench.log"
