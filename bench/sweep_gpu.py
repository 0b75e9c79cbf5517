"""A real GPU sweep with 1 worker, then with one worker per GPU: wall time, speed-up, per-cell medians.

Machine: the GPUs this process sees (printed below; meant for a 2-GPU host such as nvidia-h200-x2).
Inputs: 2 variants of a bf16 GEMM through torch (`torch.matmul(a, b)` = baseline, and
`torch.matmul(a, b, out=c)` into a preallocated output), checked against an fp32 matmul of the same
inputs (atol 0.05, rtol 0.02; inputs scaled by 1/sqrt(K) so outputs are O(1)), over `--shapes` GEMM
shapes of Llama-style projections (default 24, so 48 cells), `--runs` timed runs per cell after
`--warmup` (CUDA events, L2 flushed before each run: cold mode). Each configuration is a fresh sweep
(its own label, so nothing is resumed) recorded into one SQLite file. Prints, per configuration, the
total wall time (cluster start, CUDA initialisation and every cell) and the cells phase (first submit
to last record); then every cell's median and IQR from both runs side by side, whether they agree
within their spread (|m1 - m2| <= max(IQR1, IQR2)), and the summary line last. The 1-worker run is made
once per GPU (pinned), and each cell of the N-worker run is compared with the 1-worker run on the GPU that
timed it; the speed-up is the first GPU's 1-worker wall time over the N-worker wall time.

Recorded on nvidia-h200-x2 (2 x H200), 2026-11-23 (tests/fixtures/sweep/device-h200x2/): --runs 1000:
sweep_2gpu_speedup=1.89 x (wall 53.6 s / 28.4 s, cells phase 1.84x; 45/48 medians within spread); --runs 400:
1.73x (31.9 s / 18.4 s): worker start-up and CUDA initialisation are a fixed cost inside the wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

KERNELS = """
import math

import torch


def _inputs(m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g) / math.sqrt(k)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g)
    return a, b


def matmul(m, n, k, seed):
    a, b = _inputs(m, n, k, seed)
    return lambda: torch.matmul(a, b)


def matmul_out(m, n, k, seed):
    a, b = _inputs(m, n, k, seed)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    return lambda: torch.matmul(a, b, out=c)


def reference(m, n, k, seed):
    a, b = _inputs(m, n, k, seed)
    return lambda: torch.matmul(a.float(), b.float())
"""

SPEC = """
name = "gemm-gpu-bench"
operator = "gemm"
baseline = "matmul"
ledger = "shapes.jsonl"
gpu = {gpu}
mode = "cold"
runs = {runs}
warmup = {warmup}
cv_threshold = 0.05
[variants.matmul]
factory = "kernels.py:matmul"
reference = "kernels.py:reference"
atol = 0.05
rtol = 0.02
[variants.matmul_out]
factory = "kernels.py:matmul_out"
reference = "kernels.py:reference"
atol = 0.05
rtol = 0.02
"""

# (N, K) of Llama-3-8B-like projections (qkv, o, gate/up, down) and M token counts: shapes, not hardware.
NK = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (1024, 4096), (14336, 4096)]
MS = [1024, 2048, 4096, 8192]


def _ledger(n_shapes: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for m in MS:
        for n, k in NK:
            stage = "decode" if m <= 1024 else "prefill"
            out.append({"model": "llama3-8b", "stage": stage, "dtype": "bf16", "m": m, "n": n, "k": k})
    return out[:n_shapes]


def _run(folder: Path, db: str, workers: int, label: str) -> tuple[object, float, float]:
    from kernelpilot.sweep.models import SweepRunRequest
    from kernelpilot.sweep.run import run_sweep

    marks: list[float] = []

    def progress(done: float, total: float | None = None, message: str = "") -> None:
        marks.append(time.perf_counter())
        print(f"  [{label}] {done:.0f}/{total or 0:.0f} {message}", flush=True)

    t0 = time.perf_counter()
    res = run_sweep(
        SweepRunRequest(spec=str(folder / "sweep.toml"), db=db, device="gpu", workers=workers, label=label),
        progress,
    )
    wall = time.perf_counter() - t0
    cells_phase = marks[-1] - marks[0] if len(marks) > 1 else float("nan")
    return res, wall, cells_phase


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", type=int, default=24, help="ledger shapes (cells = 2 x shapes), at most 24")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--out", default=None, help="folder for the SQLite store, JSON results and dashboards")
    args = ap.parse_args()

    from kernelpilot.sweep.cluster import visible_gpus
    from kernelpilot.timing.environment import query_gpus

    gpus = query_gpus()
    var, ids = visible_gpus()
    print("machine: " + "; ".join(f"{g['name']} driver {g['driver_version']}" for g in gpus))
    print(f"visible GPUs: {var}={','.join(ids)}")
    if len(ids) < 2:
        print(
            "ERROR: needs at least 2 visible GPUs to compare 1 worker with one worker per GPU",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out or tempfile.mkdtemp(prefix="kp-sweep-gpu-"))
    out.mkdir(parents=True, exist_ok=True)
    folder = out / "spec"
    folder.mkdir(exist_ok=True)
    (folder / "kernels.py").write_text(KERNELS)
    gpu_name = json.dumps(gpus[0]["name"]) if gpus else '"h200-sxm"'
    (folder / "sweep.toml").write_text(SPEC.format(gpu=gpu_name, runs=args.runs, warmup=args.warmup))
    shapes = _ledger(min(args.shapes, 24))
    (folder / "shapes.jsonl").write_text("".join(json.dumps(s) + "\n" for s in shapes))
    db = str(out / "sweep.db")
    stamp = time.strftime("%H%M%S")
    print(
        f"inputs: 2 variants x {len(shapes)} shapes = {2 * len(shapes)} cells, "
        f"runs {args.runs}, warmup {args.warmup}"
    )

    # 1 worker on each GPU in turn (pinned through the visible-devices variable), then one worker per GPU.
    # Each cell of the N-worker run is compared with the 1-worker run on the GPU that timed it: two GPUs of
    # one host differ by a few % on some shapes, which is not what the comparison is about.
    import os

    singles: dict[str, tuple[object, float, float]] = {}
    for gid in ids:
        os.environ[var] = gid
        singles[gid] = _run(folder, db, 1, f"w1-gpu{gid}-{stamp}")
    os.environ[var] = ",".join(ids)
    r1, wall1, phase1 = singles[ids[0]]
    rn, walln, phasen = _run(folder, db, len(ids), f"w{len(ids)}-{stamp}")
    s1, sn = r1.summary, rn.summary  # type: ignore[attr-defined]
    from kernelpilot.sweep.report import write_html

    write_html(s1, str(out / "dashboard-1worker.html"))
    write_html(sn, str(out / f"dashboard-{len(ids)}workers.html"))
    for gid, (r, w, ph) in singles.items():
        print(f"1 worker on GPU {gid}: wall {w:.1f} s, cells phase {ph:.1f} s ({r.cluster})")  # type: ignore[attr-defined]
    print(f"{len(ids)} workers: wall {walln:.1f} s, cells phase {phasen:.1f} s ({rn.cluster})")  # type: ignore[attr-defined]
    by_gpu = {
        gid: {(c.variant, c.shape_key): c for c in r.summary.cells}  # type: ignore[attr-defined]
        for gid, (r, _, _) in singles.items()
    }
    a = by_gpu[ids[0]]
    agree, rel = 0, []
    print(
        f"{'variant':<11} {'line':>4} {'shape':<38} {'gpu':>3} {'1w median us':>13} {'IQR':>7} "
        f"{'Nw median us':>13} {'IQR':>7}  agree"
    )
    for c2 in sorted(sn.cells, key=lambda c: (c.line, c.variant)):
        key = (c2.variant, c2.shape_key)
        c1 = by_gpu.get(c2.gpu or "", {}).get(key)
        if c1 is None or c1.median is None or c2.median is None:
            print(
                f"{key[0]:<11} {c2.line:>4} {c2.label:<38} {c2.gpu!s:>3} missing or not timed ({c2.verdict})"
            )
            continue
        within = abs(c1.median - c2.median) <= max(c1.iqr or 0.0, c2.iqr or 0.0)
        agree += within
        rel.append(abs(c1.median - c2.median) / c1.median)
        print(
            f"{key[0]:<11} {c2.line:>4} {c2.label:<38} {c2.gpu!s:>3} {c1.median:>13.2f} {c1.iqr or 0:>7.2f} "
            f"{c2.median:>13.2f} {c2.iqr or 0:>7.2f}  {'yes' if within else 'NO'}"
        )
    b = by_gpu[ids[1]]  # context: the same cells, 1 worker, on the first two GPUs
    cross = [
        abs(a[k].median - b[k].median) / a[k].median  # type: ignore[operator]
        for k in a
        if k in b and a[k].median and b[k].median
    ]
    if cross:
        print(
            f"GPU {ids[0]} vs GPU {ids[1]}, 1 worker each: median |diff| "
            f"{100 * statistics.median(cross):.2f}%, max {100 * max(cross):.2f}% over {len(cross)} cells"
        )
    for s in (s1, sn):
        for v in s.summaries:
            if v.role == "candidate":
                print(
                    f"{s.sweep_id}: {v.variant} geomean {v.geomean} CI {v.geomean_ci} incorrect {v.incorrect}"
                )
    (out / "result.json").write_text(
        json.dumps(
            {
                "wall_s": {"1": wall1, str(len(ids)): walln},
                "wall_s_1worker_per_gpu": {g: w for g, (_, w, _) in singles.items()},
                "cells_phase_s": {"1": phase1, str(len(ids)): phasen},
                "agree_within_spread": agree,
                "cells": len(sn.cells),
                "median_rel_diff": statistics.median(rel) if rel else None,
            },
            indent=2,
        )
    )
    med_rel = statistics.median(rel) if rel else float("nan")
    print(
        f"sweep_{len(ids)}gpu_speedup={wall1 / walln:.2f} x (wall 1 worker {wall1:.1f} s / "
        f"{len(ids)} workers {walln:.1f} s, cells phase {phase1 / phasen:.2f}x; {len(sn.cells)} cells, "
        f"{agree}/{len(sn.cells)} medians within spread, median |diff| {100 * med_rel:.2f}%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
