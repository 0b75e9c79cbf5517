"""Harness overhead per measured run of `kernelpilot time`'s callable path.

Times an empty closure with the CPU fallback loop (`kernelpilot.timing.callables.time_cpu`) and reports,
per measured run (the GPU path's cost and floor are printed by bench/timing_vs_ncu.py: the 200-run cost and
the empty event pair each result reports):
- host cost: wall time of the whole timing loop / runs (everything the harness adds per run);
- reported floor: the median sample the timer reports for an empty closure (what is added to each sample).
Usage: python bench/timing_overhead.py [--runs 100000] [--repeats 7]
Last line: figure=value unit (median of N, spread ...).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from kernelpilot.timing.callables import time_cpu


def empty() -> None:
    return None


def spread(xs: list[float]) -> str:
    med = statistics.median(xs)
    return f"min {min(xs):.3f}, max {max(xs):.3f}, ({(max(xs) - min(xs)) / med * 100:.1f}% of median)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    host_cpu: list[float] = []
    floor_cpu: list[float] = []
    for _ in range(args.repeats):
        t0 = time.perf_counter_ns()
        samples = time_cpu([empty], args.runs, warmup=100)
        host_cpu.append((time.perf_counter_ns() - t0) / 1000 / args.runs)
        floor_cpu.append(statistics.median(samples))
    print(f"cpu path: host cost per run {statistics.median(host_cpu):.3f} us ({spread(host_cpu)})")
    print(f"cpu path: empty-closure sample {statistics.median(floor_cpu):.3f} us ({spread(floor_cpu)})")

    summary = (
        f"timing_overhead_cpu_per_run={statistics.median(host_cpu):.3f} us "
        f"(median of {args.repeats} x {args.runs} runs, spread {spread(host_cpu)})"
    )
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
