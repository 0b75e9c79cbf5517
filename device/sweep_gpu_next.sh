#!/bin/bash
# Issue 37's acceptance run on ONE 4-GPU H100 machine (nvidia-h100-x4), in one device call under 9.5 minutes
# (every step under `timeout`; estimate ~7 minutes):
#   1. bench/sweep_cell_overhead.py --device gpu (GPU 0 only, ~60 s): per-cell overhead on one worker
#      (a cell's wall minus its time in the timing engine), median; target <= 20 ms;
#   2. bench/sweep_cell_overhead.py --device cpu (~20 s): the same with a numpy kernel and the CPU timer;
#   3. bench/sweep_gpu.py --runs $KP_SWEEP_RUNS (default 2000) --workers 2,4 (~5 minutes: an untimed
#      warm-up sweep; 1 worker on GPU 0 alone (~90 s), then 1 worker on each of GPUs 1-3 at once, each its
#      own process (~95 s); then 2 and 4 workers on the same machine, same 48 cells): cells-phase and wall
#      speed-ups, per-cell medians within spread of the 1-worker run on the same GPU, the run timelines
#      (busy share per worker, head/gaps/tail, per-cell set-up/timing/result/record) and each run's fixed
#      part (worker warm-up; cluster start/close, spec, summary). Why 2000 runs and not the 1000 of the
#      issue's 2-GPU figure: a run's fixed part (~5-6 s: worker processes, torch import, CUDA context, the
#      summary) does not shrink with workers, so the wall speed-up on 4 GPUs reaches 3.2x only when the
#      cells take over ~11x that on one GPU (~45 s at 1000 runs is not enough; the cells-phase figure is
#      the one that isolates scheduling). KP_SWEEP_RUNS=1000 repeats the issue's setting (~3.5 minutes).
# Usage, from the repository root on the device: bash device/sweep_gpu_next.sh "$OUT"
# Device call: run(kind="nvidia-h100-x4", carry=[".whl"], command="bash device/sweep_gpu_next.sh \"$OUT\"")
# The image has torch but not kernelpilot's dependencies nor Dask: device/env.sh installs the wheels
# carried in .whl/ (its header says how they are made; distributed, dask and their dependencies too:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl distributed==2026.8.0 dask==2026.8.0 cloudpickle toolz partd locket fsspec msgpack psutil \
#     sortedcontainers tblib tornado zict urllib3 pyyaml click jinja2 markupsafe packaging
# ). NCCL/NVLS settings are left as the machine has them (sweeps use no NCCL).
# Files back (8): env.txt, summary.txt (the steps, then the acceptance table), sweep_gpu.log, result.json
# (every configuration's wall, cells phase, timeline and per-cell medians), overhead_gpu.log,
# overhead_gpu.json, overhead_cpu.log, steps.log.
set -u
OUT=${1:?usage: bash device/sweep_gpu_next.sh OUT_DIR}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
if ! PYTHONPATH="$KP_SITE" python3 -c "import distributed, pydantic" 2>/dev/null; then
  # a machine where device/env.sh found pydantic already: install the Dask wheels too
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$KP_SITE" \
    .whl/*.whl > "$OUT/steps.log" 2>&1 || true
fi
kp_require "import pydantic, distributed, dask, torch; print('distributed', distributed.__version__)" \
  "kernelpilot's dependencies and Dask: carry .whl"
RES=/tmp/sweep-results
rm -rf "$RES" && mkdir -p "$RES"
{
  date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import sys, torch, distributed; print('python', sys.version.split()[0], 'torch', torch.__version__, \
'distributed', distributed.__version__)"
  nproc; git log -1 --format='kernelpilot %H %s' 2>/dev/null; env | grep -E '^(NCCL|CUDA_VISIBLE)' || true
} > "$OUT/env.txt" 2>&1
t0=$(date +%s)
left() { echo $((565 - ($(date +%s) - t0))); }

kp_log "step 1: per-cell overhead on one GPU worker"
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 bench/sweep_cell_overhead.py --device gpu --out "$RES/overhead-gpu" \
  > "$OUT/overhead_gpu.log" 2>&1
kp_log "step 1 rc=$? ($(tail -1 "$OUT/overhead_gpu.log" | cut -c1-160))"
cp "$RES/overhead-gpu/overhead-gpu.json" "$OUT/overhead_gpu.json" 2>/dev/null || true

kp_log "step 2: per-cell overhead on one CPU worker"
timeout 60 python3 bench/sweep_cell_overhead.py --device cpu --out "$RES/overhead-cpu" > "$OUT/overhead_cpu.log" 2>&1
kp_log "step 2 rc=$? ($(tail -1 "$OUT/overhead_cpu.log" | cut -c1-160))"

T=$(( $(left) - 10 ))
kp_log "step 3: sweep_gpu.py 1 worker on each GPU, then 2 and 4 workers (limit ${T} s)"
if [ "$T" -gt 60 ]; then
  timeout "$T" python3 bench/sweep_gpu.py --runs "${KP_SWEEP_RUNS:-2000}" --workers 2,4 --out "$RES/gpu" \
    > "$OUT/sweep_gpu.log" 2>&1
  kp_log "step 3 rc=$?"
else
  kp_log "step 3 skipped: only ${T} s left"
fi
cp "$RES/gpu/result.json" "$OUT/result.json" 2>/dev/null || true

{
  cat "$OUT/steps.log"
  echo "--- acceptance (issue 37) ---"
  grep -E "^[0-9]+ workers: cells phase" "$OUT/sweep_gpu.log" 2>/dev/null || echo "sweep_gpu.py: no acceptance rows"
  grep -E "^1 worker on GPU|^[0-9]+ workers: wall" "$OUT/sweep_gpu.log" 2>/dev/null
  tail -1 "$OUT/sweep_gpu.log" 2>/dev/null
  tail -1 "$OUT/overhead_gpu.log" 2>/dev/null
  tail -1 "$OUT/overhead_cpu.log" 2>/dev/null
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
