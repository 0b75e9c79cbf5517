"""`kernelpilot time` (cold and warm) against ncu and CUPTI on this machine, 1 µs to 5 ms kernels (GPU only).

The regression check of every change under server/kernelpilot/timing/ (AGENTS.md): it runs unchanged on any
GPU machine and prints one table for it. For every kernel (the five new kernels of issue 33's acceptance
check and issue 33's five, bench/cold_probe_kernels.py; the nine earlier ones below: PyTorch ops, Triton,
CUDA C++ through CuPy `RawKernel`, 1 µs to 5.5 ms):
- reference cold: ncu `gpu__time_duration.sum` (`--cache-control all --clock-control none`), all kernels in
  one ncu process (between cudaProfilerStart/Stop, 15 launches each, a `torch.cuda._sleep` spin between
  kernels), median of launches 4-15;
- reference warm: CUPTI (torch.profiler) kernel durations of back-to-back launches, median per launch;
- kernelpilot: `time_kernel(TimeRequest(spec=..., runs=200, kernels=False))` as shipped (cold figure, its
  derivation, warm, CVs), and the event-pair cold timer (`--cold-timer events`) beside it.
A row passes when cold is within max(2 %, 0.3 µs) of ncu, warm within max(3 %, 0.5 µs) of CUPTI and both CVs
are <= 2 %. Then the per-kernel split of a three-kernel closure, a closure with no GPU work, and the cost of
one 200-run measurement.

Usage (GPU machine with torch, triton, cupy, ncu):
    python bench/timing_vs_ncu.py [--machine NAME] [--out FILE.json] [--only a,b]
    python bench/timing_vs_ncu.py --across A.json B.json ...   (no GPU: the same kernels across machines)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent

KERNELS_SRC = r'''
import sys
import torch

def _rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)

def make_mul_1m():
    x = _rand(1 << 20)
    return lambda: x.mul_(1.0000001)

def make_mul_4m():
    x = _rand(4 << 20)
    return lambda: x.mul_(1.0000001)

def make_mul_32m():
    x = _rand(32 << 20)
    return lambda: x.mul_(1.0000001)

def make_softmax():
    x = _rand(256, 4096, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    return lambda: torch.softmax(x, dim=-1, out=y)

def make_layer_norm():
    x = _rand(8192, 8192, dtype=torch.bfloat16)
    w = _rand(8192, dtype=torch.bfloat16)
    b = _rand(8192, dtype=torch.bfloat16)
    return lambda: torch.nn.functional.layer_norm(x, (8192,), w, b)

def make_triton_scale():
    import triton
    import triton.language as tl

    @triton.jit
    def kp_scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

    n = 16 << 20
    x = _rand(n)
    y = torch.empty_like(x)
    grid = (triton.cdiv(n, 4096),)
    return lambda: kp_scale_kernel[grid](x, y, n, BLOCK=4096)

_CUDA_SRC = r"""
extern "C" __global__ void kp_tiny(float* y) {
    if (threadIdx.x == 0) y[blockIdx.x] += 1.0f;
}
extern "C" __global__ void kp_fma_loop(float* y, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = y[i], b = 1.0000001f, c = 0.999999f;
    for (int k = 0; k < iters; ++k) { a = fmaf(a, b, c); c = fmaf(c, b, a) * 0.5f; }
    y[i] = a + c;
}
"""

def _cupy_module():
    import cupy
    return cupy, cupy.RawModule(code=_CUDA_SRC)

def make_cuda_tiny():
    cupy, mod = _cupy_module()
    k = mod.get_function("kp_tiny")
    y = cupy.zeros(1, dtype=cupy.float32)
    def run():  # launch on torch's current stream (the timer's hold and graph capture use it)
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            k((1,), (32,), (y,))
    return run

def make_cuda_fma_5ms():
    import numpy as np
    cupy, mod = _cupy_module()
    k = mod.get_function("kp_fma_loop")
    n = 132 * 4 * 256
    y = cupy.ones(n, dtype=cupy.float32)
    iters = np.int32(ITERS_5MS)
    def run():
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            k((n // 256,), (256,), (y, iters))
    return run

ITERS_5MS = 400000

def make_mm_fp32():
    a = _rand(4096, 4096)
    b = _rand(4096, 4096)
    c = torch.empty(4096, 4096, device="cuda")
    return lambda: torch.mm(a, b, out=c)

def make_three():
    x = _rand(16 << 20)
    y = torch.empty_like(x)
    s = _rand(4096, 4096)
    so = torch.empty_like(s)
    n = _rand(4096, 8192, dtype=torch.bfloat16)
    def run():
        torch.mul(x, 2.0, out=y)
        torch.softmax(s, dim=-1, out=so)
        torch.nn.functional.layer_norm(n, (8192,))
    return run

def make_nothing():
    return lambda: None

if __name__ == "__main__":
    fn = globals()["make_" + sys.argv[1]]()
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 47):
        fn()
    torch.cuda.synchronize()
'''

# name -> regex of the kernel ncu should profile (bench/cold_distributions.py profiles one kernel at a time)
KERNELS = {
    "cuda_tiny": "kp_tiny",
    "mul_1m": "vectorized_elementwise",
    "softmax": "SoftMax|softmax",
    "mul_4m": "vectorized_elementwise",
    "triton_scale": "kp_scale_kernel",
    "mul_32m": "vectorized_elementwise",
    "layer_norm": "layer_norm",
    "mm_fp32": "gemm",
    "cuda_fma_5ms": "kp_fma_loop",
}
LAUNCHES = 15  # per kernel under ncu; the first 3 are dropped
MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: splits ncu's rows by kernel


def ncu_durations_us(csv_text: str) -> list[float]:
    return [v for _, v in ncu_rows(csv_text)]


def ncu_rows(csv_text: str) -> list[tuple[str, float]]:
    """(kernel name, gpu__time_duration µs) of every profiled launch, in order."""
    from kernelpilot.timing.calibration import gpu_time_rows

    return gpu_time_rows(csv_text)


def ncu_cold(ncu: str, kern: Path, name: str, regex: str) -> list[float]:
    """One kernel of KERNELS_SRC in its own ncu process (bench/cold_distributions.py)."""
    prof = subprocess.run(
        [ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", "gpu__time_duration.sum",
         "-k", f"regex:{regex}", "--launch-skip", "20", "--launch-count", "27", "--csv",
         sys.executable, str(kern), name, "47"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return ncu_durations_us(prof.stdout)


def load(spec: str) -> Any:
    """The factory 'path.py:make_x' names."""
    path, _, fn = spec.rpartition(":")
    mspec = importlib.util.spec_from_file_location(f"kp_tvn_{abs(hash(path))}", path)
    assert mspec is not None and mspec.loader is not None, spec
    mod = importlib.util.module_from_spec(mspec)
    sys.modules[mspec.name] = mod
    sys.path.insert(0, str(Path(path).parent))
    mspec.loader.exec_module(mod)
    return getattr(mod, fn)


def ncu_child(specs: list[str]) -> None:
    """The process ncu profiles: every closure built and warmed, then between cudaProfilerStart/Stop
    LAUNCHES launches of each followed by one spin (the marker)."""
    import torch

    fns = [load(s)() for s in specs]
    for fn in fns:
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in fns:
        for _ in range(LAUNCHES):
            fn()
        torch.cuda._sleep(100)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def ncu_all(specs: dict[str, str], timeout_s: float) -> tuple[dict[str, float], str]:
    """Median ncu gpu__time_duration (µs, summed over a launch's kernels) of every kernel, one process."""
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    argv = [ncu, "--profile-from-start", "off", "--cache-control", "all", "--clock-control", "none",
            "--metrics", "gpu__time_duration.sum", "--csv",
            sys.executable, str(Path(__file__).resolve()),
            "--ncu-child", ",".join(specs.values())]  # fmt: skip
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    blocks: list[list[float]] = [[]]
    for name, v in ncu_rows(p.stdout):
        if MARKER in name:
            blocks.append([])
        else:
            blocks[-1].append(v)
    out = {}
    for name, blk in zip(specs, blocks, strict=False):
        kc = max(1, round(len(blk) / LAUNCHES))
        per = [sum(blk[j * kc : (j + 1) * kc]) for j in range(len(blk) // kc)]
        if len(per) > 3:
            out[name] = statistics.median(per[3:])
    return out, f"rc={p.returncode}, {sum(len(b) for b in blocks)} rows; stderr: {p.stderr[-400:]}"


def cupti_warm(torch: Any, fn: Any, est_us: float) -> float:
    """Median per-launch CUPTI span (summed over the closure's kernels) of back-to-back launches."""
    from kernelpilot.timing.kernels import device_events, traced

    for _ in range(3):  # a fresh closure: compile and load before its kernels are counted
        fn()
    torch.cuda.synchronize()
    kc = len(device_events(traced(torch, fn, cpu=False)))
    n = max(3, min(64, int(50_000 / max(est_us, 1.0))))

    def work() -> None:
        torch.cuda._sleep(10_000_000)  # ~5 ms spin: the launches queue behind it and run back to back
        for _ in range(n):
            fn()

    evs = [e for e in device_events(traced(torch, work, cpu=False)) if MARKER not in e[0]]
    per = [sum(d for _, _, d in evs[j * kc : (j + 1) * kc]) for j in range(len(evs) // kc)]
    return statistics.median(per)


def within(a: float, ref: float, rel: float = 0.02, floor_us: float = 0.3) -> bool:
    return abs(a - ref) <= max(rel * ref, floor_us)


def machine_info(name: str) -> dict[str, Any]:
    import torch

    from kernelpilot.timing import environment

    gpus = environment.query_gpus()
    return {
        "machine": name,
        "gpu": torch.cuda.get_device_name(),
        "gpus_on_host": len(gpus),
        "driver": gpus[0].get("driver_version") if gpus else None,
        "host": platform.node(),
        "torch": torch.__version__,
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }


def time_row(name: str, spec: str, tmp: str, runs: int) -> dict[str, Any]:
    import torch

    from kernelpilot.timing.core import time_kernel
    from kernelpilot.timing.models import TimeRequest

    t0 = time.perf_counter()
    res = time_kernel(TimeRequest(spec=spec, runs=runs, workdir=tmp, kernels=False))
    wall = time.perf_counter() - t0
    ev = time_kernel(
        TimeRequest(spec=spec, runs=runs, workdir=tmp, timing="cold", cold_timer="events", kernels=False)
    )
    assert res.cold is not None and res.warm is not None and ev.cold is not None
    d = res.cold.derivation
    return {
        "kernel": name,
        "kp_cold_us": res.cold.stats.median,
        "kp_cold_cv": res.cold.stats.cv,
        "cold_method": res.cold.method,
        "cold_derivation": d.model_dump(mode="json") if d else None,
        "kp_cold_events_us": ev.cold.stats.median,
        "event_floor_us": res.event_floor_us,
        "kp_warm_us": res.warm.stats.median,
        "kp_warm_cv": res.warm.stats.cv,
        "warm_method": res.warm.method,
        "cupti_warm_us": cupti_warm(torch, load(spec)(), res.warm.stats.median),
        "gap_free": res.cold.gap_free and res.warm.gap_free,
        "wall_s": wall,
        "warnings": res.machine.warnings,
    }


def yes(ok: bool) -> str:
    return f"{'yes' if ok else 'NO':>3s}"


def print_table(info: dict[str, Any], rows: list[dict[str, Any]]) -> int:
    """One table for this machine; returns how many rows pass."""
    print(f"\n== machine {info['machine']}: {info['gpu']} ({info['gpus_on_host']} GPU(s) on the host, driver "
          f"{info['driver']}), {info['date_utc']} UTC")  # fmt: skip
    print(f"{'kernel':26s} {'ncu':>8s} {'cold':>8s} {'diff':>6s} {'ok':>3s} {'cv%':>5s} | {'cupti w':>8s} "
          f"{'warm':>8s} {'diff':>6s} {'ok':>3s} {'cv%':>5s} | {'ev cold':>8s} {'diff':>6s} "
          "| how")  # fmt: skip
    n_ok = 0
    for r in rows:
        ncu, cold, cw, warm = (
            r.get("ncu_us", float("nan")),
            r["kp_cold_us"],
            r["cupti_warm_us"],
            r["kp_warm_us"],
        )
        r["cold_ok"] = within(cold, ncu)
        r["warm_ok"] = within(warm, cw, 0.03, 0.5)
        r["stable"] = max(r["kp_cold_cv"], r["kp_warm_cv"]) <= 0.02
        ok = r["cold_ok"] and r["warm_ok"] and r["stable"]
        n_ok += ok
        d = r.get("cold_derivation") or {}
        how = d.get("method", r["cold_method"]) + (f" +{d['offset_us_per_kernel']:.2f}" if d.get(
            "offset_us_per_kernel") else "")  # fmt: skip
        print(
            f"{r['kernel']:26s} {ncu:8.2f} {cold:8.2f} {cold - ncu:+6.2f} {yes(r['cold_ok'])} "
            f"{r['kp_cold_cv'] * 100:5.2f} | {cw:8.2f} {warm:8.2f} {warm - cw:+6.2f} "
            f"{yes(r['warm_ok'])} {r['kp_warm_cv'] * 100:5.2f} | {r['kp_cold_events_us']:8.2f} "
            f"{r['kp_cold_events_us'] - ncu:+6.2f} | {how}"
        )
    return n_ok


def across(paths: list[str]) -> int:
    """The same kernels' cold figures across machines of one GPU model (recorded JSONs): within 0.3 µs?"""
    by_gpu: dict[str, list[dict[str, Any]]] = {}
    for p in paths:
        run = json.loads(Path(p).read_text())
        by_gpu.setdefault(run["machine"]["gpu"], []).append(run)
    n_ok = n_all = 0
    for gpu, runs in by_gpu.items():
        print(f"\n== {gpu}: " + ", ".join(r["machine"]["machine"] for r in runs))
        print(
            f"{'kernel':26s} "
            + " ".join(f"{r['machine']['machine'][:12]:>12s}" for r in runs)
            + "  spread ok"
        )
        for name in [r["kernel"] for r in runs[0]["rows"]]:
            vals = [
                next((x["kp_cold_us"] for x in r["rows"] if x["kernel"] == name), float("nan")) for r in runs
            ]
            spread = max(vals) - min(vals)
            n_ok += spread <= 0.3
            n_all += 1
            cols = " ".join(f"{v:12.2f}" for v in vals)
            print(f"{name:26s} {cols}  {spread:5.2f} {yes(spread <= 0.3)}")
    print(f"timing_vs_ncu_across={n_ok}/{n_all} kernels within 0.3 us across machines of the same GPU model")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="write the JSON results here")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--machine", default=os.environ.get("KP_MACHINE", platform.node()), help="label")
    ap.add_argument("--ncu-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--across", nargs="+", default=None, help="recorded JSONs of several machines")
    args = ap.parse_args()
    if args.ncu_child:
        ncu_child(args.ncu_child.split(","))
        return 0
    if args.across:
        return across(args.across)
    import faulthandler

    faulthandler.dump_traceback_later(400, repeat=True)  # a stuck run shows where it is stuck
    sys.path.insert(0, str(BENCH.parent / "server"))
    sys.path.insert(0, str(BENCH))
    import torch

    import cold_probe_kernels as cpk
    from kernelpilot.timing.core import time_kernel
    from kernelpilot.timing.models import TimeRequest

    t_start = time.perf_counter()
    info = machine_info(args.machine)
    rows: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        kern = Path(tmp) / "kp_bench_kernels.py"
        kern.write_text(KERNELS_SRC)
        specs = {n: f"{BENCH / 'cold_probe_kernels.py'}:make_{n}" for n in (*cpk.NEW_FIVE, *cpk.ISSUE_FIVE)}
        specs |= {n: f"{kern}:make_{n}" for n in KERNELS}
        if args.only:
            specs = {n: s for n, s in specs.items() if n in args.only.split(",")}
        t0 = time.perf_counter()
        ncu, ncu_note = ncu_all(specs, 240)
        print(f"ncu: {len(ncu)}/{len(specs)} kernels in {time.perf_counter() - t0:.0f} s ({ncu_note[:80]})")
        for name, spec in specs.items():
            try:
                row = time_row(name, spec, tmp, args.runs)
            except Exception as exc:  # one kernel failing must not lose the others: report it
                errors[name] = f"{type(exc).__name__}: {exc}"
                print(f"{name}: FAILED {errors[name]}", flush=True)
                continue
            row["ncu_us"] = ncu.get(name, float("nan"))
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "cold_derivation"}), flush=True)
        cost = []
        for _ in range(3):
            t0 = time.perf_counter()
            time_kernel(TimeRequest(spec=f"{kern}:make_mul_1m", runs=200, workdir=tmp))
            cost.append(time.perf_counter() - t0)
        three = time_kernel(TimeRequest(spec=f"{kern}:make_three", runs=100, workdir=tmp))
        try:
            time_kernel(TimeRequest(spec=f"{kern}:make_nothing", runs=10, workdir=tmp))
            errors["nothing"] = "NO ERROR"
        except Exception as exc:  # report the kind
            errors["nothing"] = f"{type(exc).__name__}: {exc}"
    n_ok = print_table(info, rows)
    k = three.kernels
    warm3 = three.warm.stats.median if three.warm else float("nan")
    if k is not None:
        print(f"three-kernel closure: warm {warm3:.2f} us, kernel sum {k.kernel_sum_us_per_call:.2f} us "
              f"({(k.kernel_sum_us_per_call - warm3) / warm3 * 100:+.2f} %):")  # fmt: skip
        for ks in k.kernels:
            print(f"   {ks.duration_us_per_call:9.2f} us x{ks.launches_per_call:g} {ks.name[:80]}")
    if rows and rows[0].get("cold_derivation"):
        print(f"cold derivation: {rows[0]['cold_derivation']['note']}")
    print(f"errors: {errors}")
    med_cost = statistics.median(cost)
    if args.out:
        Path(args.out).write_text(json.dumps({"machine": info, "rows": rows, "cost_s": cost, "errors": errors,
                                              "three": three.model_dump(mode="json")}, indent=1))  # fmt: skip
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, pid {os.getpid()}, "
          f"wall {time.perf_counter() - t_start:.0f} s")  # fmt: skip
    print(
        f"timing_vs_ncu={n_ok}/{len(rows)} kernels within tolerance and stable on {info['machine']}; "
        f"200-run cost {med_cost:.2f} s (median of {len(cost)}, spread {min(cost):.2f}-{max(cost):.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
