#!/usr/bin/env bash
# One remote GPU run per phase of the optimization loop (skills/kernel-baseline/batch.md, issue 32).
#
# Copy this file into the workspace, set the variables below (or pass them in the environment), carry the
# workspace to the GPU host (skills/gpu-kernel-optimizer/remote.md) and run ONE command there:
#     PHASE=baseline bash batch_run.sh       # doctor + baseline refresh; stops when the baseline is not usable
#     PHASE=candidates bash batch_run.sh     # baseline refresh again (same host, this lease), then each candidate
#     PHASE=profile bash batch_run.sh        # ncu of the kept version
# Every step runs under `timeout`, writes its output under $OUT (default ./batch_out), and a failed step is
# recorded and the next one still runs -- except the gate: a baseline that is not stable, failed or
# rejected ends the run before any candidate spends device time. The summary table is printed last.
# Bring $OUT back and record at home: `kernelpilot memory create --eval-result $OUT/<ref>/result.json`.
set -u

WS=${WS:-.}                                          # the workspace folder (its own git repository)
TASK=${TASK:-$WS/.kernelpilot/tasks/my-task}         # the task folder (holds task.json)
KERNEL=${KERNEL:-kernel.py}                          # the allowed file, relative to the workspace
CANDIDATES=${CANDIDATES:-}                           # git refs of the workspace holding candidate kernels
PHASE=${PHASE:-baseline}
OUT=${OUT:-$PWD/batch_out}
STEP_S=${STEP_S:-300}                                # the limit of one step, seconds
KP=${KP:-kernelpilot}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.tsv"
printf 'step\tstatus\tdetail\n' >"$SUMMARY"

status_of() {  # the `status` of an eval's JSON output ("" when it printed none)
    python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1])).get("status", ""))
except Exception: print("")' "$1"
}

step() {  # step NAME CMD...: run under timeout, keep stdout/stderr, record the exit code
    local name=$1; shift
    timeout "$STEP_S" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    local rc=$?
    printf '%s\t%s\t%s\n' "$name" "rc=$rc" "$*" >>"$SUMMARY"
    return $rc
}

gate_baseline() {  # the refreshed baseline must be usable, or nothing else is timed
    local st
    st=$(status_of "$OUT/baseline.out")
    case "$st" in
        unstable|failed|correctness_failed|rejected_*|"")
            printf 'GATE\tstop\tbaseline status %s: fix the harness before timing candidates\n' "${st:-missing}" >>"$SUMMARY"
            return 1 ;;
    esac
    printf 'GATE\tpass\tbaseline status %s\n' "$st" >>"$SUMMARY"
}

baseline() {
    step doctor "$KP" --json doctor
    git -C "$WS" checkout -q -- "$KERNEL" 2>/dev/null
    step baseline "$KP" eval --json --refresh-baseline "$TASK"
    cp "$TASK/baseline.json" "$OUT/baseline.json" 2>/dev/null
    gate_baseline
}

candidates() {
    baseline || return 1                              # the parent, measured again on this host
    local head ref safe st
    head=$(git -C "$WS" rev-parse HEAD)
    for ref in $CANDIDATES; do
        safe=$(printf '%s' "$ref" | tr -c 'A-Za-z0-9._-' '_')
        mkdir -p "$OUT/$safe"
        if ! git -C "$WS" checkout -q "$ref" -- "$KERNEL"; then
            printf '%s\tskipped\tgit ref not found\n' "$safe" >>"$SUMMARY"; continue
        fi
        step "$safe/eval" "$KP" eval --json "$TASK"
        cp "$TASK/result.json" "$OUT/$safe/result.json" 2>/dev/null
        st=$(status_of "$OUT/$safe/eval.out")
        printf '%s\t%s\tvs the baseline above (paired when its commit is clean)\n' "$safe" "${st:-?}" >>"$SUMMARY"
        git -C "$WS" checkout -q "$head" -- "$KERNEL"
    done
    cp "$TASK/ledger.jsonl" "$OUT/ledger.jsonl" 2>/dev/null
    return 0
}

profile() {
    step doctor "$KP" --json doctor
    step profile "$KP" profile run --json --mode full --export "$OUT/kept.ncu-rep" -- python3 "$WS/bench.py"
}

case "$PHASE" in
    baseline) baseline ;;
    candidates) candidates ;;
    profile) profile ;;
    *) echo "PHASE must be baseline, candidates or profile" >&2; exit 2 ;;
esac
rc=$?
column -t -s $'\t' "$SUMMARY" 2>/dev/null || cat "$SUMMARY"
exit $rc
