"""Harness overhead per measured run of `kernelpilot time`'s callable path.

Times an empty closure with the real timing loops (`kernelpilot.timing.callables.time_cpu`, and
`time_cuda` when torch sees a GPU or `--cuda` is given) and reports, per measured run:
- host cost: wall time of the whole timing loop / runs (everything the harness adds per run);
- reported floor: the median sample the timer reports for an empty closure (what is added to each sample).
Usage: python bench/timing_overhead.py [--runs 100000] [--repeats 7] [--cuda]
Last line: figure=value unit (median of N, spread ...).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from kernelpilot.timing.callables import time_cpu, time_cuda


def empty() -> None:
    return None


def spread(xs: list[float]) -> str:
    med = statistics.median(xs)
    return f"min {min(xs):.3f}, max {max(xs):.3f}, ({(max(xs) - min(xs)) / med * 100:.1f}% of median)"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cuda", action="store_true", help="also the CUDA-event path (needs torch + GPU)")
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
    if args.cuda:
        import torch

        if not torch.cuda.is_available():
            print("no CUDA GPU: CUDA-event path skipped")
        else:
            n = min(args.runs, 20_000)
            host_gpu: list[float] = []
            gap_gpu: list[float] = []
            for _ in range(args.repeats):
                t0 = time.perf_counter_ns()
                samples, _ = time_cuda(torch, [empty], n, warmup=100, l2_flush=False)
                host_gpu.append((time.perf_counter_ns() - t0) / 1000 / n)
                gap_gpu.append(statistics.median(samples))
            # In-region floor: hold the GPU with a spin kernel while the loop is queued, so that the
            # two events of each run are processed back to back as they are behind a real kernel.
            cyc = 10_000_000
            s_ev, e_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s_ev.record()
            torch.cuda._sleep(cyc)
            e_ev.record()
            torch.cuda.synchronize()
            cycles_per_us = cyc / (s_ev.elapsed_time(e_ev) * 1000.0)
            m = 200
            hold_us = 5 * m * statistics.median(host_gpu)
            floor_gpu: list[float] = []
            for _ in range(args.repeats):
                samples, _ = time_cuda(
                    torch,
                    [empty],
                    m,
                    warmup=10,
                    l2_flush=False,
                    hold_gpu=lambda: torch.cuda._sleep(int(hold_us * cycles_per_us)),
                )
                floor_gpu.append(statistics.median(samples))
            print(
                f"cuda-event path ({torch.cuda.get_device_name()}): host cost per run "
                f"{statistics.median(host_gpu):.3f} us ({spread(host_gpu)})"
            )
            print(
                f"cuda-event path: empty region with the GPU idle (host-bound gap) "
                f"{statistics.median(gap_gpu):.3f} us ({spread(gap_gpu)})"
            )
            print(
                f"cuda-event path: empty region behind queued work (in-region floor) "
                f"{statistics.median(floor_gpu):.3f} us ({spread(floor_gpu)})"
            )
            summary = (
                f"timing_overhead_cuda_event_in_region={statistics.median(floor_gpu):.3f} us, host "
                f"{statistics.median(host_gpu):.3f} us/run; "
                f"cpu path {statistics.median(host_cpu):.3f} us/run "
                f"(median of {args.repeats} x {m}/{n} runs, spread {spread(floor_gpu)})"
            )
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
