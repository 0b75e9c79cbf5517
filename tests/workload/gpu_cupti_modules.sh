#!/usr/bin/env bash
# Issue 23, "ISA facts joined for >= 90 % of the hot set's GPU time": on an H100, with cupti-python carried as
# a wheel, (1) probe the CUPTI facts workload/loaded_cubins.py relies on (tests/workload/gpu_cupti_probe.py),
# (2) run the module capture child alone on the decode step, (3) run `workload run` with drill-down on the
# decode and prefill steps of bench/workload_model.py and print the hot set's code-object share and, per hot
# kernel, where its facts came from. Each step under `timeout`; a failed step is logged, not fatal.
#
# Run from the repository root on the device, `.whl` carried (cupti_python-13.4.0 cp312 wheel; pyelftools;
# optional/cuda_pathfinder only installed when the machine's is older than cupti-python needs):
#   bash tests/workload/gpu_cupti_modules.sh            (writes at most 8 files under $OUT)
# Budget: about 4 minutes (decode ~60 s and prefill ~45 s with drill-down, probes ~15 s each).
set -u
OUT=${OUT:-/tmp/gpu_cupti_out}
W=/tmp/gpu_cupti_work
mkdir -p "$OUT" "$W"
LOG="$OUT/log.txt"
exec > >(tee -a "$LOG") 2>&1
T0=$(date +%s)
step() {  # step NAME TIMEOUT CMD...: stdout to $W/NAME.txt, stderr to $W/NAME.err, wall and rc logged
  local name=$1 to=$2; shift 2
  local s e rc
  s=$(date +%s%N)
  timeout -k 5 "$to" "$@" > "$W/$name.txt" 2> "$W/$name.err"
  rc=$?
  e=$(date +%s%N)
  printf 'STEP %-20s rc=%-3s wall=%d ms\n' "$name" "$rc" $(((e - s) / 1000000)) | tee -a "$OUT/walls.txt"
  [ "$rc" -ne 0 ] && tail -15 "$W/$name.err"
  return 0
}

echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
git log --oneline -1 2>/dev/null || true
. device/env.sh  # kernelpilot, its dependencies and cupti-python importable (wheels carried in .whl/)
python3 -m pip show nvidia-cuda-cupti cuda-bindings cuda-pathfinder 2>/dev/null | grep -E '^(Name|Version|Location)'
python3 - <<'EOF' || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/optional/cuda_pathfinder-*.whl
import importlib.metadata as m, sys
v = tuple(int(x) for x in m.version("cuda-pathfinder").split(".")[:3])
print("cuda-pathfinder", v, "(cupti-python 13.4.0 asks >= 1.4.1)")
sys.exit(0 if v >= (1, 4, 1) else 1)
EOF
python3 -c "from cupti import cupti; print('cupti-python imported from', cupti.__file__)"

# 1. probes: callback data layout, replay of modules loaded before subscribing, the activity MODULE kind
for m in layout order fresh activity; do
  step "probe_$m" 90 python3 tests/workload/gpu_cupti_probe.py "$m"
  cat "$W/probe_$m.txt" >> "$OUT/probe.txt"
  head -c 3000 "$W/probe_$m.txt"; echo
done

# 2. the capture child alone (all modules, no name filter), as workload run starts it
step cubins_decode 120 python3 -m kernelpilot.workload.loaded_cubins bench/workload_model.py:make_decode \
  --out "$W/cubins_decode"
python3 - "$W/cubins_decode" <<'EOF'
import json, sys, tarfile
from pathlib import Path
from kernelpilot.workload.loaded_cubins import strtab
d = Path(sys.argv[1])
s = json.loads((d / "cubins.json").read_text())
print("modules loaded", s["modules_loaded"], "callbacks", s["callbacks"], "unreadable", s["unreadable"],
      "kept", len(s["files"]), "MB", round(sum(f["bytes"] for f in s["files"]) / 1e6, 1), s["notes"])
keep, size = [], 0
for f in s["files"]:
    syms = [x for x in (strtab(Path(f["path"]).read_bytes()) or b"").split(b"\0") if x.startswith((b"nvjet", b"cudnn"))]
    if syms:
        print(" ", Path(f["path"]).name, f["bytes"], [x.decode() for x in syms[:3]])
        if size + f["bytes"] < 12_000_000:  # small real fixtures for the next session
            keep.append(f["path"]); size += f["bytes"]
with tarfile.open("/tmp/gpu_cupti_work/nvjet_cubins.tgz", "w:gz") as t:
    for p in keep:
        t.add(p, arcname=Path(p).name)
EOF
cp "$W/nvjet_cubins.tgz" "$OUT/" 2>/dev/null

# 3. workload run with drill-down, decode and prefill (acceptance: <= 90 s wall each, code-object share)
K="python3 -m kernelpilot"
for ph in decode prefill; do
  step "$ph" 200 $K workload run bench/workload_model.py:make_$ph --steps 20 --warmup 10 --drill \
    --out "$W/$ph.json"
  cp "$W/$ph.json" "$OUT/" 2>/dev/null
  cp "$W/$ph.txt" "$OUT/${ph}_view.txt" 2>/dev/null
  python3 - "$W/$ph.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: wall {r['wall_s']:.1f} s; hot set ISA facts {r['isa_joined_share']:.0%}: "
      f"code objects {r.get('isa_code_object_share')!r}, launch records only {r.get('isa_trace_share')!r}")
for n in r["notes"]:
    if "CUPTI" in n or "cupti" in n or "cubins" in n:
        print("  note:", n[:300])
for k in r["kernels"]:
    if k.get("hot"):
        i = k.get("isa") or {}
        print(f"  {k['us_per_step']:8.1f} us {i.get('facts')!s:11} {i.get('origin')!s:15} r{i.get('registers')}"
              f" smem {i.get('shared_bytes')} occ {str(i.get('occupancy')).split(' (')[0]} lim {i.get('limiter')}"
              f"  {k['name'][:90]}")
EOF
done
# 4. a command with an NVTX region, its first 2 step instances skipped (ncu --range-filter ::[3-6]): the
#    launches per step must equal the closure capture's (decode.json), and the note names instances 3-6
step region_skip 200 $K workload run \
  --command '["python3","bench/workload_model.py","decode","--steps","6","--warmup","0"]' \
  --region step --skip-steps 2 --steps 4 --no-drill --out "$W/region_skip.json"
python3 - "$W/region_skip.json" "$W/decode.json" <<'EOF'
import json, sys
r, c = (json.load(open(p)) for p in sys.argv[1:3])
lps = lambda x: round(sum(k["launches_per_step"] for k in x["kernels"]), 2)
print("region_skip: launches/step", lps(r), "closure", lps(c), [n for n in r["notes"] if "instances" in n])
EOF
echo "== walls"; cat "$OUT/walls.txt"
echo "total $(( $(date +%s) - T0 )) s"
ls -la "$OUT"
