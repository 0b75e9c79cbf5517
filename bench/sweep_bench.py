"""Scheduling + recording overhead per cell of `kernelpilot sweep run` on a 1,000-cell CPU sweep.

Machine: this host (printed below). Inputs: 2 variants x 500 ledger shapes = 1,000 cells whose closures
do nothing (runs=1, warmup=0, no reference), on a local Dask cluster of `--workers` CPU worker processes
(default 1: the serial worst case), recording into a fresh SQLite file. Each repetition is a fresh
sweep. Per-cell overhead = the interval between two consecutive cells being recorded by the driver
minus the time the worker spent inside that cell (its own `wall_s`), i.e. what submitting, scheduling,
shipping the result back, scoring and writing the record cost. The first cell of each run (worker
warm-up, first imports) is left out. Prints the median over every cell of every run, with spread.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

KERNELS = """
def noop_a(rows, cols):
    return lambda: None


def noop_b(rows, cols):
    return lambda: None
"""

SPEC = """
name = "overhead-bench"
operator = "noop"
baseline = "a"
ledger = "shapes.jsonl"
runs = 1
warmup = 0
[variants.a]
factory = "kernels.py:noop_a"
[variants.b]
factory = "kernels.py:noop_b"
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
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    import distributed

    return (
        f"{cpu}, {usable} usable cores, Python {platform.python_version()}, "
        f"distributed {distributed.__version__}, SQLite store on {tempfile.gettempdir()}"
    )


def one_run(folder: Path, shapes: int, workers: int) -> tuple[list[float], float, int]:
    from kernelpilot.experiments.backends import open_store
    from kernelpilot.experiments.store import RecordFilter
    from kernelpilot.sweep.models import SweepRunRequest
    from kernelpilot.sweep.run import run_sweep

    (folder / "kernels.py").write_text(KERNELS)
    (folder / "sweep.toml").write_text(SPEC)
    with (folder / "shapes.jsonl").open("w") as f:
        for i in range(shapes):
            f.write(
                json.dumps({"model": "bench", "stage": "s", "dtype": "fp32", "rows": i + 1, "cols": 64})
                + "\n"
            )
    db = folder / "exp.db"
    stamps: list[float] = []

    def progress(done: float, total: float | None = None, message: str = "") -> None:
        if done >= 1:
            stamps.append(time.perf_counter())

    t0 = time.perf_counter()
    res = run_sweep(
        SweepRunRequest(spec=str(folder / "sweep.toml"), db=str(db), device="cpu", workers=workers), progress
    )
    wall = time.perf_counter() - t0
    store = open_store(str(db))
    try:
        cells = store.query(RecordFilter(parent_id=res.summary.sweep_id), limit=10 * shapes, order="oldest")
    finally:
        store.close()
    by_order = sorted(cells, key=lambda c: (c.created, c.id))
    inside = [c.raw_result["wall_s"] for c in by_order]
    intervals = [b - a for a, b in itertools.pairwise(stamps)]
    # interval i ends when cell i+1 (in arrival order) was recorded; subtract that cell's own time
    overhead = [max(iv - w, 0.0) for iv, w in zip(intervals, inside[1:], strict=False)]
    return overhead, wall, len(cells)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", type=int, default=500, help="ledger shapes (cells = 2 x shapes)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {_machine()}")
    print(
        f"inputs: 2 variants x {args.shapes} shapes = {2 * args.shapes} no-op cells, {args.workers} worker(s)"
    )
    all_ms: list[float] = []
    run_medians: list[float] = []
    for r in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="kp-sweep-bench-") as tmp:
            overhead, wall, n = one_run(Path(tmp), args.shapes, args.workers)
        ms = [x * 1000 for x in overhead]
        all_ms.extend(ms)
        run_medians.append(statistics.median(ms))
        q = statistics.quantiles(ms, n=10)
        print(
            f"run {r + 1}: {n} cells recorded, wall {wall:.2f} s (cluster start included), per-cell overhead "
            f"median {run_medians[-1]:.2f} ms, p10 {q[0]:.2f} ms, p90 {q[-1]:.2f} ms"
        )
        if n != 2 * args.shapes:
            print(f"ERROR: expected {2 * args.shapes} cells, found {n}", file=sys.stderr)
            return 1
    med = statistics.median(all_ms)
    q = statistics.quantiles(all_ms, n=4)
    print(
        f"overhead_per_cell={med:.2f} ms (median of {len(all_ms)} cells over {args.repeat} runs, spread IQR "
        f"{q[0]:.2f}-{q[2]:.2f} ms, run medians {min(run_medians):.2f}-{max(run_medians):.2f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
