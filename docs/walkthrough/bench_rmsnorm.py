"""Eval command for the RMSNorm task: times the kernel with CUDA events and prints {"median_us": ...} as JSON.

Usage: python bench_rmsnorm.py KERNEL_FILE. Rotates 4 input sets so the 50 MB L2 does not hold the input.
"""

import importlib.util
import json
import statistics
import sys

import torch


def main() -> None:
    spec = importlib.util.spec_from_file_location("kernel", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    closures = mod.make(rotate=4)
    for c in closures * 5:
        c()
    torch.cuda.synchronize()
    times = []
    for i in range(100):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        closures[i % len(closures)]()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    print(json.dumps({"median_us": statistics.median(times), "runs": len(times)}))


if __name__ == "__main__":
    main()
