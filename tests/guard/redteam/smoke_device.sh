#!/usr/bin/env bash
# Red-team smoke on a GPU machine, from the repository root: each candidate under tests/guard/redteam/ run
# mechanically (no guard) to show what it does: checks' errors, timed figure vs an honest baseline, the
# floor, the synchronized re-check, threads, files. ~5 min on an H100. Results in $OUT: smoke_table.tsv
# (the summary), smoke.jsonl (one record per run), child_logs.txt (each child's output tail), steps.log.
set -u
OUT=${OUT:-/tmp/redteam_smoke}
mkdir -p "$OUT"
# shellcheck source=/dev/null
source device/env.sh
kp_log "redteam smoke: start"
timeout 570 python3 tests/guard/redteam/smoke_device.py --out "$OUT" --timeout 90 "$@" > "$OUT/parent.txt" 2>&1
kp_log "redteam smoke: exit $?"
cat "$OUT/smoke_table.tsv" 2>/dev/null || tail -20 "$OUT/parent.txt"
