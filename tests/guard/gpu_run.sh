#!/bin/bash
# Issues 25 and 31's acceptance run on an H100, in one device call (under 9.5 minutes; every step under
# `timeout`):
#   1. tests/guard/gpu_suite.py: every GPU hack (41 + the red team's, 8 at once; then, alone on a quiet GPU,
#      each task's honest twin and every accepted hack: caught / neutralized / WIN) and the honest look-alikes
#      (16 + the red team's, one at a time) end to end through `kernelpilot eval` with a contract (paired
#      against the baseline commit), each look-alike's verdict beside the one `kernelpilot compare` gives against the task's baseline,
#      every eval in one experiment database (estimate from the 2026-11-24 records, with tests/guard/redteam's
#      cases: ~9 minutes; look-alikes not started by KP_SUITE_BUDGET_S, default 470 s (500 s with
#      KP_SUITE_ONLY), are skipped and listed as SKIP: the ones issue 31 names run first);
#   2. bench/guard_overhead.py --reps 5 (when 110 s are left): the guard's share of a paired eval's wall
#      time on a ~50 us kernel;
#   3. bench/guard_breakdown.py --reps 3 (when 100 s are left): where that eval's wall time goes (process
#      start-ups, torch's import and the CUDA context alone, each subprocess, the checks, the observation).
# Usage, from the repository root on the device: bash tests/guard/gpu_run.sh "$OUT"
# (KP_SUITE_ONLY=1: step 1 alone. KP_SUITE_S: the suite's wall limit in seconds. KP_SUITE_PART=hacks or honest: half the suite, for two calls that each
# finish well inside the limit: hacks ~6 minutes then the overhead bench (KP_OVERHEAD_REPS=4
# KP_NO_BREAKDOWN=1), honest ~8 minutes with KP_SUITE_ONLY=1; each refreshes only the baselines its half
# needs)
# The device image has torch but not kernelpilot's dependencies: device/env.sh installs the wheels
# carried in .whl/ (how to make them: its header)
# Name .whl in the call's `carry`. Files back (at most 8): env.txt, summary.txt (the steps, then the
# acceptance table), suite.log, overhead.log, breakdown.log, suite.json, exp_failures.txt, details.tgz
# (per-case `compare` results, the cache warm-up logs, the task folders with their result.json and ledgers,
# the experiment database).
set -u
OUT=${1:?usage: bash tests/guard/gpu_run.sh OUT_DIR}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
python3 -c "import pydantic" 2>/dev/null || { echo "no pydantic: carry .whl" | tee "$OUT/summary.txt"; exit 3; }
RES=/tmp/guard-results
rm -rf "$RES" && mkdir -p "$RES"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import sys, torch, pydantic; print('python', sys.version.split()[0], 'torch', torch.__version__, \
'pydantic', pydantic.VERSION)"
  git --version; nproc; git log -1 --format='kernelpilot %H %s' 2>/dev/null
} > "$OUT/env.txt" 2>&1
t0=$(date +%s)
# the suite's wall limit, and when it stops starting look-alikes (KP_SUITE_BUDGET_S: those not started by
# then are listed as SKIP); the steps after it run only in the time left of 565 s
SUITE_S=540 BUDGET=${KP_SUITE_BUDGET_S:-470}
[ -n "${KP_SUITE_ONLY:-}" ] && SUITE_S=560 BUDGET=${KP_SUITE_BUDGET_S:-500}
# the hacks half leaves ~110 s for the overhead bench: its timing-alone step (honest twins, accepted hacks)
# starts nothing past the budget
[ "${KP_SUITE_PART:-all}" = hacks ] && [ -z "${KP_SUITE_ONLY:-}" ] && SUITE_S=450 BUDGET=${KP_SUITE_BUDGET_S:-400}
SUITE_S=${KP_SUITE_S:-$SUITE_S}  # a shorter wall limit, when the same call runs another step first
REPS=${KP_OVERHEAD_REPS:-5}
KP_SUITE_BUDGET_S=$BUDGET timeout "$SUITE_S" python3 tests/guard/gpu_suite.py "$RES/suite" > "$OUT/suite.log" 2>&1
echo "suite rc=$? after $(( $(date +%s) - t0 )) s" > "$OUT/summary.txt"
bench_step() {  # bench_step NAME SECONDS CMD...: CMD into $OUT/NAME.log if SECONDS of the 565 s are left
  local name=$1 need=$2 left
  shift 2
  left=$(( 565 - ($(date +%s) - t0) ))
  if [ "$left" -gt "$need" ]; then
    timeout "$left" "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$? after $(( $(date +%s) - t0 )) s" >> "$OUT/summary.txt"
  else
    echo "$name skipped: $left s left" >> "$OUT/summary.txt"
  fi
}
if [ -n "${KP_SUITE_ONLY:-}" ]; then
  echo "overhead and breakdown skipped: KP_SUITE_ONLY set" >> "$OUT/summary.txt"
else
  bench_step overhead 110 python3 bench/guard_overhead.py --reps "$REPS"
  if [ -n "${KP_NO_BREAKDOWN:-}" ]; then
    echo "breakdown skipped: KP_NO_BREAKDOWN set" >> "$OUT/summary.txt"
  else
    bench_step breakdown 100 python3 bench/guard_breakdown.py --reps 3
  fi
fi
cp "$RES/suite/suite.json" "$RES/suite/exp_failures.txt" "$OUT/" 2>/dev/null
mkdir -p "$RES/tasks"
for d in /tmp/guard-suite*; do
  [ -d "$d/.kernelpilot" ] && cp -r "$d/.kernelpilot" "$RES/tasks/$(basename "$d")" 2>/dev/null
done
find "$RES/tasks" -name .baseline-tree -prune -exec rm -rf {} + 2>/dev/null
tar czf "$OUT/details.tgz" -C "$RES" . 2>/dev/null
grep -E "^figure=" "$OUT/overhead.log" 2>/dev/null | tail -1 >> "$OUT/summary.txt"
grep -E "^(plan|baseline|honest twin|\[|SKIP|FAIL)" "$OUT/suite.log" >> "$OUT/summary.txt"
cat "$RES/suite/table.md" >> "$OUT/summary.txt" 2>/dev/null
cat "$OUT/summary.txt"
