"""Per-launch cold distributions on a GPU: event pairs, CUPTI kernel durations and ncu, per kernel.

Why: the cold sample statistic (`kernelpilot.timing.gpu.cold_sample`) rests on how single flushed launches
spread: the kernel's own execution (CUPTI start -> end) against the event pair around it, against ncu's
`gpu__time_duration` of the same kernel. This records all three, launch by launch, for the small and mid
kernels of bench/timing_vs_ncu.py, and prints their quantiles and what each cold statistic would read.

Usage (GPU machine with torch, triton, cupy, ncu):
    python bench/cold_distributions.py [--only a,b] [--launches 480] [--out FILE.json]
The JSON it writes is the format of tests/fixtures/timing/cold_distributions_h100.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

import timing_vs_ncu as tvn

SMALL = ("cuda_tiny", "mul_1m", "mul_4m", "softmax", "triton_scale", "mul_32m", "layer_norm")
# CUPTI kernel names of the timed kernel (the flush's fill kernel is a vectorized_elementwise kernel too)
TRACE_NAME = {"mul_1m": "MulFunctor", "mul_4m": "MulFunctor", "mul_32m": "MulFunctor"}


def _q(xs: list[float], p: float) -> float:
    from kernelpilot.timing.stats import quantile

    return quantile(sorted(xs), p)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--launches", type=int, default=480)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch

    from kernelpilot.timing.gpu import (
        SpinHold,
        cold_per_sample,
        cold_sample,
        event_floor_us,
        make_flush,
        run_held,
    )
    from kernelpilot.timing.kernels import device_events, traced

    names = [n for n in SMALL if not args.only or n in args.only.split(",")]
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    hold = SpinHold(torch)
    flush, _ = make_flush(torch)
    stream = torch.cuda.current_stream()

    def flushed_pairs(fn: object, count: int) -> list[float]:
        """Event pairs (µs) around `count` launches of fn, each after a flush, queued behind holds."""

        def enq(_: int) -> tuple[object, object]:
            flush()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record(stream)
            fn()  # type: ignore[operator]
            e.record(stream)
            return s, e

        got, _ = run_held(torch, hold, count, enq)
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1000.0 for s, e in got]  # type: ignore[attr-defined]

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        kern = Path(tmp) / "kp_bench_kernels.py"
        kern.write_text(tvn.KERNELS_SRC)
        sys.path.insert(0, tmp)
        import kp_bench_kernels as kb  # type: ignore[import-not-found]

        for name in names:
            fn = getattr(kb, f"make_{name}")()
            for _ in range(200):
                fn()
            torch.cuda.synchronize()
            floor = event_floor_us(torch, hold, runs=128)  # what the timer subtracts
            ev = [v - floor for v in flushed_pairs(fn, args.launches)]

            def work(fn: object = fn) -> None:
                for _ in range(64):
                    flush()
                    fn()  # type: ignore[operator]

            pat = TRACE_NAME.get(name, tvn.KERNELS[name])
            cupti = [d for n, _, d in device_events(traced(torch, work, cpu=False)) if re.search(pat, n)]
            nv = tvn.ncu_cold(ncu, kern, name, tvn.KERNELS[name])
            out[name] = {
                "empty_event_pair_floor_us": round(floor, 3),
                "event_pair_net_us": [round(v, 3) for v in ev],
                "ncu_gpu_time_duration_us": nv,
                "cupti_kernel_duration_us": [round(v, 3) for v in cupti],
            }
            ref = statistics.median(nv)
            m = cold_per_sample(ref)  # grouped as time_cold groups them
            groups = [cold_sample(ev[i : i + m]) for i in range(0, len(ev) - m + 1, m)]
            print(
                f"{name:13s} ncu {ref:9.3f} | cupti p10-p90 {_q(cupti, 0.1):8.3f}-{_q(cupti, 0.9):8.3f} | "
                f"events p10-p90 {_q(ev, 0.1):8.3f}-{_q(ev, 0.9):8.3f} median {_q(ev, 0.5):8.3f} "
                f"({_q(ev, 0.5) - ref:+.3f}) | cold_sample({m}) median {statistics.median(groups):8.3f} "
                f"({statistics.median(groups) - ref:+.3f})",
                flush=True,
            )
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, {args.launches} launches each")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
