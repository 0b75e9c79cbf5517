"""Record what the replay tests need of GPU candidates (needs torch + a GPU; run on the device machine).

Two modes:

- `KERNELPILOT_GUARD_TASK=task.json python tests/guard/record_trace.py OUT.json`: the task's candidate timed
  (warm and cold, `kernelpilot.timing.callables.time_factory`), then 5 calls traced with torch.profiler,
  the device events kept with their stream (the fixtures `tests/guard/test_replay.py` feeds to
  `observe.observation_from_trace` + `judge`; trace_*.json).
- `python tests/guard/record_trace.py --all OUT_DIR` (issue 31): each case of CASES in its own process
  (`--case NAME OUT.json`, under a 110 s timeout), self-contained (contract and candidate written to a
  temporary folder): a `guard.observe.Watch` started before the candidate loads, the contract's timed
  closures (`guard.timed.closures_for`: fresh values and sampled outputs) timed cold by
  `timing.gpu.time_modes` (which calls their hooks), then `observe.observe(..., watch=)` with the activity
  trace kept (CPU activity on: the runtime/driver records carry the launching thread), the judgement, and
  what fresh values and sampling cost per call (CUDA events around 50 hook calls). Writes
  OUT_DIR/threads_<case>.json and prints a summary table last. Copy the JSON files to
  tests/fixtures/guard/ (test_replay.py's thread-attribution tests read them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CALLS = 5
CASE_TIMEOUT_S = 110  # per case (its own process); the 5 cases fit one 600 s device call

GEMM_CONTRACT = """
import torch
DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = torch.randn(m, k, generator=g).to(device=device, dtype=DT[dtype])
    b = torch.randn(k, n, generator=g).to(device=device, dtype=DT[dtype])
    return [a, b]
def reference(a, b):
    return a @ b
"""
RMS_CONTRACT = """
import torch
DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(shape["rows"], shape["cols"], generator=g).to(device=device, dtype=DT[dtype])
    w = (1 + 0.1 * torch.randn(shape["cols"], generator=g)).to(device=device, dtype=DT[dtype])
    return [x, w]
def reference(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
"""
ADD_CONTRACT = """
import torch
def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [torch.randn(shape["n"], generator=g).to(device), torch.randn(shape["n"], generator=g).to(device)]
def reference(x, y):
    return x + y
"""
GEMM = {"shapes": [{"m": 2048, "n": 2048, "k": 2048}], "dtype": "bf16", "reduction": "k"}
RMS = {"shapes": [{"rows": 8192, "cols": 4096}], "dtype": "bf16", "reduction": "cols"}
ADD = {"shapes": [{"n": 12_582_912}], "dtype": "fp32"}

# name -> (contract module source, contract fields, candidate source, what the guard should say)
CASES: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "honest_gemm": (GEMM_CONTRACT, GEMM, "import torch\ndef cand(a, b):\n    return a @ b\n", "accepted"),
    "compile_rmsnorm": (
        RMS_CONTRACT,
        RMS,
        "import torch\n@torch.compile\ndef cand(x, w):\n"
        "    return x * torch.rsqrt((x.float() * x.float()).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w\n",
        "accepted",
    ),
    "library_idle_gemm": (
        GEMM_CONTRACT,
        GEMM,
        "import threading, torch\n"
        "threading.Thread(target=threading.Event().wait, name='idle-library-wait', daemon=True).start()\n"
        "def cand(a, b):\n    return a @ b\n",
        "accepted",
    ),
    "pool_launch_gemm": (
        GEMM_CONTRACT,
        GEMM,
        "import torch\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix='gemm-pool')\n"
        "def cand(a, b):\n    return _pool.submit(torch.mm, a, b).result()\n",
        "rejected_thread",
    ),
    "add_cost": (ADD_CONTRACT, ADD, "import torch\ndef cand(x, y):\n    return x + y\n", "accepted"),
}


def _keep(trace: dict[str, Any]) -> dict[str, Any]:
    """The events the attribution reads: device work, launch records, the annotation, thread names."""
    from kernelpilot.guard.observe import ANNOTATION, LAUNCH_CATEGORIES
    from kernelpilot.timing.kernels import DEVICE_CATEGORIES

    keep = []
    for ev in trace.get("traceEvents", []):
        if not isinstance(ev, dict):
            continue
        cat, ph = ev.get("cat"), ev.get("ph")
        wanted = (ph == "X" and (cat in DEVICE_CATEGORIES or cat in LAUNCH_CATEGORIES)) or (
            ph == "X" and ev.get("name") == ANNOTATION
        )
        if ph == "M" and ev.get("name") == "thread_name":
            wanted = True
        if not wanted:
            continue
        out = {k: ev.get(k) for k in ("ph", "cat", "name", "ts", "dur", "pid", "tid") if k in ev}
        args = ev.get("args") or {}
        out["args"] = {k: args[k] for k in ("stream", "correlation", "device", "name") if k in args}
        keep.append(out)
    return {"traceEvents": keep}


def _hook_cost_us(torch: Any, closures: list[Any], name: str, reps: int = 50) -> float:
    """GPU time per hook call (CUDA events around `reps` calls of closures' hook `name`)."""
    fn = closures[0]
    fn.before_timed()
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        getattr(fn, name)()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) * 1000.0 / reps


def record_case(name: str, out: Path) -> int:
    import torch

    from kernelpilot.guard import contract as cmod
    from kernelpilot.guard import observe
    from kernelpilot.guard.models import Contract
    from kernelpilot.timing import gpu, kernels

    source, fields, cand, expect = CASES[name]
    tmp = Path(tempfile.mkdtemp(prefix=f"kp-record-{name}-"))
    (tmp / "contract_mod.py").write_text(source)
    (tmp / "cand.py").write_text(cand)
    contract = Contract(module="contract_mod.py", candidate="cand.py:cand", device="cuda", **fields)
    kept: dict[str, Any] = {}
    real = kernels.traced

    def keeping(t: Any, work: Any, cpu: bool = True) -> dict[str, Any]:
        got = real(t, work, cpu=cpu)
        kept["trace"] = got
        return got

    # The trace is kept through a wrapper installed BEFORE the watch snapshots kernelpilot's timing
    # functions: installed after, the watch rightly reports `kernels.traced` replaced (the first H100
    # recording, 2026-11-27, read rejected_timer_replaced on every case for exactly that).
    kernels.traced = keeping  # type: ignore[assignment]
    watch = observe.Watch()  # before the candidate's module loads, as guard.checked starts it
    t0 = time.perf_counter()
    from kernelpilot.guard.timed import closures_for

    closures = closures_for(cmod.Loaded(contract, tmp), 2)
    for fn in closures:
        fn()  # the first call (torch.compile compiles here), as the checks' and check_comparable's calls
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    timings, _, _ = gpu.time_modes(
        torch, closures, modes=["cold"], runs=40, warmup=5, warmup_min_s=0.3, cold_timer="events"
    )
    samples = sorted(timings["cold"].samples_us)
    median = samples[len(samples) // 2]
    try:
        obs = observe.with_findings(observe.observe(torch, closures, 10, timed_us=median, watch=watch), watch)
    finally:
        kernels.traced = real  # type: ignore[assignment]
    tol, _ = cmod.tolerance(contract, contract.shapes[0])
    rej = observe.judged(obs, median, None, tol)
    doc = {
        "case": name,
        "expect": expect,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "recorded_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "contract": contract.model_dump(mode="json"),
        "candidate": cand,
        "timing_native_id": threading.get_native_id(),
        "timed_cold_us": median,
        "first_call_s": first_s,
        "fresh_us_per_call": _hook_cost_us(torch, closures, "before_timed"),
        "sample_us_per_call": _hook_cost_us(torch, closures, "after_timed"),
        "observation": obs.model_dump(mode="json"),
        "rejection": rej.model_dump(mode="json") if rej is not None else None,
        "trace": _keep(kept["trace"]) if "trace" in kept else None,
    }
    out.write_text(json.dumps(doc, indent=1))
    got = rej.status if rej is not None else "accepted"
    print(
        f"{name}: {got} (expected {expect}); cold {median:.1f} us; fresh {doc['fresh_us_per_call']:.1f} us, "
        f"sample {doc['sample_us_per_call']:.1f} us per call; threads {[t.name for t in obs.threads]}; "
        f"foreign {[(f.thread, f.kernel[:30]) for f in obs.foreign_launches]}"
    )
    return 0 if got == expect else 1


def record_all(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in CASES:
        path = out_dir / f"threads_{name}.json"
        try:
            res = subprocess.run(
                [sys.executable, __file__, "--case", name, str(path)],
                capture_output=True, text=True, timeout=CASE_TIMEOUT_S, check=False,
            )  # fmt: skip
            line = (res.stdout.strip().splitlines() or [f"no output; stderr: {res.stderr[-800:]}"])[-1]
            rows.append(f"{'OK  ' if res.returncode == 0 else 'FAIL'} {line}")
            if res.returncode not in (0, 1):
                rows.append(f"     stderr: {res.stderr[-1500:]}")
        except subprocess.TimeoutExpired:
            rows.append(f"FAIL {name}: timed out after {CASE_TIMEOUT_S} s")
    print("\n".join(rows))
    return 0 if all(r.startswith("OK") or r.startswith("     ") for r in rows) else 1


def record_task(out: str) -> int:
    import torch

    from kernelpilot.guard import timed
    from kernelpilot.timing.callables import time_factory
    from kernelpilot.timing.kernels import DEVICE_CATEGORIES, traced

    closures = timed.make()  # the same closures are timed and traced, as in `kernelpilot time --observe`
    t = time_factory(
        lambda: closures, runs=20, warmup=3, rotate=1, modes=["warm", "cold"], device="cuda", kernels=False
    )

    def work() -> None:
        for _ in range(CALLS):
            closures[0]()

    trace = traced(torch, work, cpu=False)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    work()
    torch.cuda.synchronize()
    synced_us = (time.perf_counter() - t0) * 1e6 / CALLS
    keep = [
        {k: ev.get(k) for k in ("ph", "cat", "name", "ts", "dur", "pid", "tid", "args")}
        for ev in trace.get("traceEvents", [])
        if isinstance(ev, dict) and ev.get("ph") == "X" and ev.get("cat") in DEVICE_CATEGORIES
    ]
    for ev in keep:
        args = ev.get("args") or {}
        ev["args"] = {k: args[k] for k in ("stream", "device", "context") if k in args}
    doc = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "calls": CALLS,
        "synced_us": synced_us,
        "timed_warm_us": sorted(t.modes["warm"].samples_us)[len(t.modes["warm"].samples_us) // 2],
        "timed_cold_us": sorted(t.modes["cold"].samples_us)[len(t.modes["cold"].samples_us) // 2],
        "trace": {"traceEvents": keep},
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    print(
        f"recorded {len(keep)} device events; warm {doc['timed_warm_us']:.2f} us "
        f"cold {doc['timed_cold_us']:.2f} us"
    )
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--all"] and len(argv) == 2:
        return record_all(Path(argv[1]))
    if argv[:1] == ["--case"] and len(argv) == 3:
        return record_case(argv[1], Path(argv[2]))
    if len(argv) == 1 and os.environ.get("KERNELPILOT_GUARD_TASK"):
        return record_task(argv[0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
