"""Per-cell overhead of `kernelpilot sweep run` on one worker: a cell's wall time minus its timed work.

Machine: this host (printed below). Inputs: 2 variants x `--shapes` shapes (n = `--step` .. `--step` x
`--shapes`), checked against a float64 reference, timed `--runs` times after `--warmup`, on a local
Dask cluster of ONE worker recording into a fresh SQLite file. `--device cpu`: numpy float32 row sums
of n x 256 (the sweep's own cost, not a kernel's, is what shows), CPU timer, runs here; `--device gpu`:
torch bf16 n x n x n matmuls on the first visible GPU, cold mode (the GPU run of the same bench). The
candidate is timed paired with the baseline, as sweeps do.

Per cell, from the phases the worker records for it (`sweep.models.CellPhases`, stored in each cell's
record under `phases_s`): the time the cell held the worker (end of the previous cell on it to its own end:
dispatch, result hand-off, set-up and timing) minus its time inside the timing engine (warm-up, calibration,
timed runs). Every cell counts, the first included (the worker is warmed before the cells phase). Also
printed: the medians of each step and the run's timeline as `sweep run` prints it. Last line: the median
overhead with its spread (target: <= 20 ms, issue 37).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

KERNELS_CPU = """
import numpy as np


def _inputs(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 256), dtype=np.float32)


def matmul(n, seed):  # the CPU stand-in: a row sum (n x 256), cheap enough that the sweep's own cost shows
    x = _inputs(n, seed)
    return lambda: x.sum(axis=1)


def matmul_out(n, seed):
    x = _inputs(n, seed)
    out = np.empty(n, dtype=np.float32)
    return lambda: np.sum(x, axis=1, out=out)


def reference(n, seed):
    x = _inputs(n, seed)
    return lambda: x.sum(axis=1, dtype=np.float64)
"""

KERNELS_GPU = """
import math

import torch


def _inputs(n, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g) / math.sqrt(n)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    return a, b


def matmul(n, seed):
    a, b = _inputs(n, seed)
    return lambda: torch.matmul(a, b)


def matmul_out(n, seed):
    a, b = _inputs(n, seed)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    return lambda: torch.matmul(a, b, out=c)


def reference(n, seed):
    a, b = _inputs(n, seed)
    return lambda: torch.matmul(a.float(), b.float())
"""

SPEC = """
name = "cell-overhead-{device}"
operator = "gemm"
baseline = "matmul"
ledger = "shapes.jsonl"
mode = "{mode}"
runs = {runs}
warmup = {warmup}
cv_threshold = 0.5
[variants.matmul]
factory = "kernels.py:matmul"
reference = "kernels.py:reference"
atol = {atol}
rtol = 0.02
[variants.matmul_out]
factory = "kernels.py:matmul_out"
reference = "kernels.py:reference"
atol = {atol}
rtol = 0.02
"""


def _machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import distributed

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    py = platform.python_version()
    return f"{cpu}, {usable} usable cores, Python {py}, distributed {distributed.__version__}"


def _overheads(cells: list[dict]) -> tuple[list[float], dict[str, list[float]]]:
    """Per cell (ms): held minus timing, and each step; cells of one worker in start order."""
    phases = sorted((c["phases_s"] for c in cells), key=lambda p: p["started_unix"])
    over: list[float] = []
    steps: dict[str, list[float]] = {k: [] for k in ("gap", "load", "build", "check", "timing", "rest")}
    prev_end = None
    for p in phases:
        held = p["ended_unix"] - (p["started_unix"] if prev_end is None else prev_end)
        gap = 0.0 if prev_end is None else max(p["started_unix"] - prev_end, 0.0)
        over.append(1000 * max(held - p["timing_s"], 0.0))
        wall = p["ended_unix"] - p["started_unix"]
        rest = wall - p["load_s"] - p["build_s"] - p["check_s"] - p["timing_s"]
        for k, v in (("gap", gap), ("load", p["load_s"]), ("build", p["build_s"]), ("check", p["check_s"]),
                     ("timing", p["timing_s"]), ("rest", rest)):  # fmt: skip
            steps[k].append(1000 * v)
        prev_end = p["ended_unix"]
    return over, steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--shapes", type=int, default=24, help="ledger shapes (cells = 2 x shapes)")
    ap.add_argument("--step", type=int, default=None, help="matrix size step (cpu 16, gpu 256)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per cell (cpu 20, gpu 200)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", default=None, help="folder for the SQLite store and result.json")
    args = ap.parse_args()
    runs = args.runs or (20 if args.device == "cpu" else 200)
    args.step = args.step or (16 if args.device == "cpu" else 256)
    from kernelpilot.experiments.backends import open_store
    from kernelpilot.experiments.store import RecordFilter
    from kernelpilot.sweep.models import SweepRunRequest
    from kernelpilot.sweep.run import run_sweep

    print(f"machine: {_machine()}")
    out = Path(args.out or tempfile.mkdtemp(prefix="kp-sweep-overhead-"))
    out.mkdir(parents=True, exist_ok=True)
    folder = out / f"spec-{args.device}"
    folder.mkdir(exist_ok=True)
    gpu = args.device == "gpu"
    (folder / "kernels.py").write_text(KERNELS_GPU if gpu else KERNELS_CPU)
    (folder / "sweep.toml").write_text(
        SPEC.format(
            device=args.device,
            mode="cold" if gpu else "warm",
            runs=runs,
            warmup=args.warmup,
            atol=0.05 if gpu else 1e-2,
        )
    )
    sizes = [args.step * (i + 1) for i in range(args.shapes)]
    (folder / "shapes.jsonl").write_text(
        "".join(
            json.dumps({"model": "bench", "stage": "s", "dtype": "bf16" if gpu else "fp32", "n": n}) + "\n"
            for n in sizes
        )
    )
    print(f"inputs: 2 variants x {len(sizes)} shapes (n = {sizes[0]}..{sizes[-1]}), runs {runs}, 1 worker")
    db = str(out / f"sweep-{args.device}.db")
    t0 = time.perf_counter()
    res = run_sweep(
        SweepRunRequest(
            spec=str(folder / "sweep.toml"),
            db=db,
            device=args.device,
            workers=1,
            label=time.strftime("%H%M%S"),
        )
    )
    wall = time.perf_counter() - t0
    store = open_store(db)
    try:
        recs = store.query(RecordFilter(parent_id=res.summary.sweep_id), limit=10_000)
    finally:
        store.close()
    cells = [r.raw_result for r in recs if r.raw_result.get("phases_s")]
    over, steps = _overheads(cells)
    assert res.timeline is not None
    print("\n".join(res.timeline.render_lines()))
    print(f"wall {wall:.1f} s for {len(cells)} cells ({res.cluster})")
    print("per cell, median ms: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in steps.items()))
    q = statistics.quantiles(over, n=4) if len(over) > 1 else [over[0]] * 3
    (out / f"overhead-{args.device}.json").write_text(
        json.dumps(
            {
                "overhead_ms": over,
                "steps_ms": steps,
                "wall_s": wall,
                "timeline": res.timeline.model_dump(mode="json"),
            },
            indent=2,
        )
    )
    med = statistics.median(over)
    print(
        f"sweep_cell_overhead_{args.device}={med:.2f} ms (median of {len(over)} cells on 1 worker, spread "
        f"IQR {q[0]:.2f}-{q[2]:.2f} ms, max {max(over):.2f} ms; target <= 20 ms)"
    )
    return 0 if len(cells) == 2 * len(sizes) else 1


if __name__ == "__main__":
    sys.exit(main())
