#!/bin/bash
# Issue 33's cold-timing probe in one device call (about 3 minutes; every step under `timeout`):
#   host.txt    the machine: CPU, NUMA, PCIe link, persistence, topology, `nvidia-smi -q -d PERFORMANCE`, IOMMU
#               (all read-only: clocks and settings are never changed);
#   probe.json  bench/cold_probe.py: every timer's per-launch readings of flushed launches (event pairs, empty
#               pairs, %globaltimer brackets, CUPTI kernel durations, warm), kernelpilot's current cold/warm and
#               ncu gpu__time_duration of the same 13 kernels (bench/cold_probe_kernels.py);
#   ncu.csv     ncu's raw CSV; probe.log the probe's stdout; summary.txt its table; steps.log.
# Usage from the repository root: bash device/cold_probe_next.sh   (OUT: the device tool's folder, else ./cold_probe_out)
# Needs kernelpilot's dependencies importable: device/env.sh installs the wheels carried in .whl/.
set -u
OUT=${OUT:-$PWD/cold_probe_out}
mkdir -p "$OUT"
. device/env.sh  # kernelpilot and its dependencies importable (wheels carried in .whl/)
kp_log "start in $PWD"
kp_require "import torch, cupy, triton, pydantic, kernelpilot.timing.core; assert torch.cuda.is_available()" \
  "torch with a GPU, cupy, triton, pydantic, kernelpilot"
H="$OUT/host.txt"
hx() { echo "==== $*" >> "$H"; timeout 20 "$@" >> "$H" 2>&1 || echo "(rc=$?)" >> "$H"; }
{ date -u; uname -a; echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"; nproc; } > "$H" 2>&1
git log -1 --format='kernelpilot %H %s' >> "$H" 2>&1
hx nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,persistence_mode,compute_mode,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv
hx nvidia-smi topo -m
hx nvidia-smi -q -d PERFORMANCE
hx nvidia-smi -q
hx lscpu
hx numactl -H
for f in /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor /proc/cmdline /proc/driver/nvidia/version; do
  echo "==== $f" >> "$H"; cat "$f" >> "$H" 2>&1
done
echo "==== cpuidle states (cpu0)" >> "$H"
for d in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
  echo "$(cat "$d/name" 2>/dev/null) disable=$(cat "$d/disable" 2>/dev/null) latency=$(cat "$d/latency" 2>/dev/null)" >> "$H"
done
echo "==== iommu groups: $(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)" >> "$H"
echo "==== GPU PCI numa/local cpus, taskset" >> "$H"
for b in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
  p=/sys/bus/pci/devices/$(echo "${b: -12}" | tr 'A-F' 'a-f')
  echo "$b numa=$(cat "$p/numa_node" 2>/dev/null) cpus=$(cat "$p/local_cpulist" 2>/dev/null)" >> "$H"
done
taskset -p $$ >> "$H" 2>&1
hx lspci -tv
env | grep -iE '^(CUDA|NCCL|NVIDIA|TORCH)' >> "$H" 2>&1
kp_log "host info written; probe (budget 140 s)"
timeout -k 10 190 python3 bench/cold_probe.py --out "$OUT" --budget-s 140 > "$OUT/probe.log" 2>&1
kp_log "probe rc=$?"
timeout 10 nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv >> "$H" 2>&1
echo "==== summary"
tail -n 30 "$OUT/probe.log"
