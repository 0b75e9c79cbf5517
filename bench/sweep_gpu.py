"""A GPU sweep on 1 worker per GPU, then 2, 4, ... workers: wall and cells-phase speed-ups, per-cell medians.

Machine: the GPUs this process sees (printed below; meant for a 4-GPU host such as nvidia-h100-x4, where
it runs 1, 2 and 4 workers on the same machine). Inputs: 2 variants of a bf16 GEMM through torch
(`torch.matmul(a, b)` = baseline, and `torch.matmul(a, b, out=c)` into a preallocated output), checked
against an fp32 matmul of the same inputs (atol 0.05, rtol 0.02; inputs scaled by 1/sqrt(K) so outputs
are O(1)), over `--shapes` GEMM shapes of Llama-style projections (default 24, so 48 cells), `--runs` timed
runs per cell after `--warmup` (L2 flushed before each run: cold mode). Each configuration is a fresh
sweep (its own label, so nothing is resumed) recorded into one SQLite file. Before the timed runs, one
small untimed sweep on one worker pages in torch and CUDA's libraries, so the first timed run does not pay
a cold disk that later ones skip.

Prints, per configuration, the total wall time (cluster start, worker warm-up, every cell, the summary)
and the cells phase (first submit to last record, `sweep.timeline`), with the run's timeline (per worker
busy share, head, gaps, tail; per cell medians of wait, set-up, timing, result, record). The 1-worker
run is made once per GPU (pinned: GPU 0 alone, as the base of the speed-ups, then the others at once, each
in its own process, unless --serial-singles); each cell of an N-worker run is compared with the 1-worker
run on the GPU that timed it (|m1 - mN| <= max(IQR1, IQRN): within spread); speed-ups are over the first
GPU's 1-worker run. Last: the acceptance table of issue 37 and one summary line.

Recorded on nvidia-h200-x2 (2 x H200), 2026-11-23 (tests/fixtures/sweep/device-h200x2/), before issue 37:
--runs 1000: 1.89x wall (53.6 s / 28.4 s), cells phase 1.84x; 45/48 medians within spread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def _run(folder: Path, db: str, workers: int, label: str) -> tuple[Any, float]:
    from kernelpilot.sweep.models import SweepRunRequest
    from kernelpilot.sweep.run import run_sweep

    def progress(done: float, total: float | None = None, message: str = "") -> None:
        if done == 0 or done == total or int(done) % 8 == 0:
            print(f"  [{label}] {done:.0f}/{total or 0:.0f} {message}", flush=True)

    t0 = time.perf_counter()
    res = run_sweep(
        SweepRunRequest(spec=str(folder / "sweep.toml"), db=db, device="gpu", workers=workers, label=label),
        progress,
    )
    wall = time.perf_counter() - t0
    print(f"[{label}] wall {wall:.1f} s on {res.cluster}")
    if res.timeline is not None:
        print("\n".join(f"[{label}] {line}" for line in res.timeline.render_lines()), flush=True)
    return res, wall


def _write_spec(folder: Path, gpu_name: str, runs: int, warmup: int, shapes: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.py").write_text(KERNELS)
    (folder / "sweep.toml").write_text(SPEC.format(gpu=gpu_name, runs=runs, warmup=warmup))
    (folder / "shapes.jsonl").write_text("".join(json.dumps(s) + "\n" for s in shapes))


def _single_child(out: Path, label: str) -> int:
    """Child of `_parallel_singles`: one 1-worker run on the GPU its environment pins, into its own SQLite
    file; writes the result and its wall time as JSON."""
    res, wall = _run(out / "spec", str(out / f"sweep-{label}.db"), 1, label)
    (out / f"{label}.json").write_text(json.dumps({"wall_s": wall, "result": res.model_dump(mode="json")}))
    return 0


def _parallel_singles(out: Path, gids: list[str], var: str, stamp: str) -> dict[str, Any]:
    """1-worker runs on the other GPUs at the same time, each its own process pinned to its GPU: their
    per-cell medians are what each GPU reads alone (the host is shared, as in the N-worker run); only the
    first GPU's run, made alone, is the base of the speed-ups."""
    import os
    import subprocess

    from kernelpilot.sweep.models import SweepRunResult

    procs = {}
    for gid in gids:
        label = f"w1-gpu{gid}-{stamp}"
        env = {**os.environ, var: gid}
        procs[gid] = (label, subprocess.Popen(
            [sys.executable, __file__, "--single", label, "--out", str(out)], env=env
        ))  # fmt: skip
    got: dict[str, Any] = {}
    for gid, (label, proc) in procs.items():
        if proc.wait() != 0:
            print(f"ERROR: the 1-worker run on GPU {gid} failed (exit {proc.returncode})", file=sys.stderr)
            continue
        rec = json.loads((out / f"{label}.json").read_text())
        got[gid] = (SweepRunResult.model_validate(rec["result"]), rec["wall_s"])
    return got


def _compare(singles: dict[str, Any], res: Any) -> dict[str, Any]:
    """Each cell of an N-worker run against the 1-worker run on the GPU that timed it."""
    by_gpu = {g: {(c.variant, c.shape_key): c for c in r.summary.cells} for g, (r, _) in singles.items()}
    rows, agree, rel = [], 0, []
    for c2 in sorted(res.summary.cells, key=lambda c: (c.line, c.variant)):
        c1 = by_gpu.get(c2.gpu or "", {}).get((c2.variant, c2.shape_key))
        row: dict[str, Any] = {"variant": c2.variant, "line": c2.line, "label": c2.label, "gpu": c2.gpu}
        row.update(median_n=c2.median, iqr_n=c2.iqr, median_1=None, iqr_1=None, within=False)
        if c1 is not None and c1.median is not None and c2.median is not None:
            within = abs(c1.median - c2.median) <= max(c1.iqr or 0.0, c2.iqr or 0.0)
            agree += within
            rel.append(abs(c1.median - c2.median) / c1.median)
            row.update(median_1=c1.median, iqr_1=c1.iqr, within=within)
        rows.append(row)
    return {
        "cells": rows,
        "agree": agree,
        "n": len(rows),
        "median_rel_diff": statistics.median(rel) if rel else None,
    }


def _table(rows: list[dict[str, Any]]) -> None:
    head = f"{'variant':<11} {'line':>4} {'shape':<38} {'gpu':>3} {'1w median':>10} {'IQR':>7}"
    print(f"{head} {'Nw median':>10} {'IQR':>7}  agree")
    for r in rows:
        if r["median_1"] is None:
            print(f"{r['variant']:<11} {r['line']:>4} {r['label']:<38} {r['gpu']!s:>3} missing or not timed")
            continue
        print(f"{r['variant']:<11} {r['line']:>4} {r['label']:<38} {r['gpu']!s:>3} {r['median_1']:>10.2f} "
              f"{r['iqr_1'] or 0:>7.2f} {r['median_n']:>10.2f} {r['iqr_n'] or 0:>7.2f}  "
              f"{'yes' if r['within'] else 'NO'}")  # fmt: skip


def _config(res: Any, wall: float) -> dict[str, Any]:
    tl = res.timeline
    return {
        "wall_s": wall,
        "cells_phase_s": tl.cells_phase_s if tl else None,
        "timeline": tl.model_dump(mode="json") if tl else None,
        "cluster": res.cluster,
        "sweep_id": res.summary.sweep_id,
    }


def _acceptance(out: dict[str, Any]) -> str:
    """Issue 37's acceptance rows from the recorded figures (one line each)."""
    need = {"2": (1.9, 1.8), "4": (3.6, 3.2)}
    lines = []
    for n, cfg in out["multi"].items():
        ph_need, wall_need = need.get(n, (0.9 * int(n), 0.8 * int(n)))
        ph, wall = cfg["phase_speedup"], cfg["wall_speedup"]
        share = cfg["agree"] / max(cfg["n"], 1)
        lines.append(
            f"{n} workers: cells phase {ph:.2f}x (>= {ph_need}: {'PASS' if ph >= ph_need else 'FAIL'}), wall "
            f"{wall:.2f}x (>= {wall_need}: {'PASS' if wall >= wall_need else 'FAIL'}), medians within spread "
            f"{cfg['agree']}/{cfg['n']} = {share:.1%} (>= 95%: {'PASS' if share >= 0.95 else 'FAIL'})"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", type=int, default=24, help="ledger shapes (cells = 2 x shapes), at most 24")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--workers", default="2,4", help="worker counts beside 1 (those above the GPUs: skipped)")
    ap.add_argument("--out", default=None, help="folder for the SQLite store, result.json and dashboards")
    ap.add_argument("--serial-singles", action="store_true", help="1-worker runs of GPUs 2.. one at a time")
    ap.add_argument("--single", default=None, help=argparse.SUPPRESS)  # internal: one pinned 1-worker run
    args = ap.parse_args()
    if args.single is not None:
        return _single_child(Path(args.out), args.single)

    from kernelpilot.sweep.cluster import visible_gpus
    from kernelpilot.timing.environment import query_gpus

    gpus = query_gpus()
    var, ids = visible_gpus()
    print("machine: " + "; ".join(f"{g['name']} driver {g['driver_version']}" for g in gpus))
    print(f"visible GPUs: {var}={','.join(ids)}")
    counts = [n for n in (int(x) for x in args.workers.split(",") if x.strip()) if 1 < n <= len(ids)]
    if not counts:
        print(f"ERROR: needs at least 2 visible GPUs for --workers {args.workers}", file=sys.stderr)
        return 2
    out = Path(args.out or tempfile.mkdtemp(prefix="kp-sweep-gpu-"))
    out.mkdir(parents=True, exist_ok=True)
    gpu_name = json.dumps(gpus[0]["name"]) if gpus else '"h100-sxm5"'
    shapes = _ledger(min(args.shapes, 24))
    _write_spec(out / "spec", gpu_name, args.runs, args.warmup, shapes)
    _write_spec(out / "warm", gpu_name, 20, 2, shapes[:1])
    db = str(out / "sweep.db")
    stamp = time.strftime("%H%M%S")
    print(f"inputs: 2 variants x {len(shapes)} shapes = {2 * len(shapes)} cells, runs {args.runs}, "
          f"warmup {args.warmup}; worker counts 1 (each GPU), {', '.join(map(str, counts))}")  # fmt: skip

    import os

    used = ids[: max(counts)]
    os.environ[var] = used[0]
    _run(out / "warm", db, 1, f"warm-{stamp}")  # untimed: pages in torch, CUDA, the profiler
    # 1 worker on each GPU in turn (pinned through the visible-devices variable), then N workers. Each cell of
    # an N-worker run is compared with the 1-worker run on the GPU that timed it: two GPUs of one host differ
    # by a few % on some shapes, which is not what the comparison is about.
    singles: dict[str, Any] = {}
    os.environ[var] = used[0]
    singles[used[0]] = _run(out / "spec", db, 1, f"w1-gpu{used[0]}-{stamp}")  # alone: the speed-ups' base
    if args.serial_singles:
        for gid in used[1:]:
            os.environ[var] = gid
            singles[gid] = _run(out / "spec", db, 1, f"w1-gpu{gid}-{stamp}")
    else:
        singles.update(_parallel_singles(out, used[1:], var, stamp))
    r1, wall1 = singles[used[0]]
    phase1 = r1.timeline.cells_phase_s
    result: dict[str, Any] = {
        "gpus": [g["name"] for g in gpus], "runs": args.runs, "cells": 2 * len(shapes),
        "single": {g: _config(r, w) for g, (r, w) in singles.items()}, "multi": {},
    }  # fmt: skip
    for n in counts:
        os.environ[var] = ",".join(used[:n])
        rn, walln = _run(out / "spec", db, n, f"w{n}-{stamp}")
        cmp = _compare(singles, rn)
        _table(cmp["cells"])
        from kernelpilot.sweep.report import write_html

        write_html(rn.summary, str(out / f"dashboard-{n}workers.html"))
        result["multi"][str(n)] = {
            **_config(rn, walln), **cmp,
            "wall_speedup": wall1 / walln, "phase_speedup": phase1 / rn.timeline.cells_phase_s,
        }  # fmt: skip
    (out / "result.json").write_text(json.dumps(result, indent=2))
    for gid, (r, w) in singles.items():
        tl = r.timeline
        print(f"1 worker on GPU {gid}: wall {w:.1f} s, cells phase {tl.cells_phase_s:.1f} s, worker warm-up "
              f"{tl.warm_s:.1f} s, the rest (cluster start/close, spec, summary) "
              f"{w - tl.cells_phase_s - tl.warm_s:.1f} s")  # fmt: skip
    for n, cfg in result["multi"].items():
        tl = cfg["timeline"]
        rest = cfg["wall_s"] - cfg["cells_phase_s"] - tl["warm_s"]
        print(f"{n} workers: wall {cfg['wall_s']:.1f} s, cells phase {cfg['cells_phase_s']:.1f} s, warm-up "
              f"{tl['warm_s']:.1f} s, the rest {rest:.1f} s, busy "
              f"{cfg['timeline']['busy_share']:.0%}, median |diff| vs 1 worker "
              f"{100 * (cfg['median_rel_diff'] or 0):.2f}%")  # fmt: skip
    print(_acceptance(result))
    parts = [
        f"{n} GPUs wall {c['wall_speedup']:.2f}x phase {c['phase_speedup']:.2f}x {c['agree']}/{c['n']} within"
        for n, c in result["multi"].items()
    ]
    top = result["multi"][str(max(counts))]
    print(f"sweep_{max(counts)}gpu_speedup={top['wall_speedup']:.2f} x (1 worker {wall1:.1f} s wall, "
          f"{phase1:.1f} s cells phase; " + "; ".join(parts) + ")")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
