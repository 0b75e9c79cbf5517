"""Record what the replay tests need of one GPU candidate (run by gpu_suite.py; needs torch + a GPU).

Usage: KERNELPILOT_GUARD_TASK=task.json python tests/guard/record_trace.py OUT.json
Times the contract task's candidate (warm and cold, `kernelpilot.timing.callables.time_factory`), then
traces 5 calls with torch.profiler and keeps the device events (kernels, copies, fills with their
stream): the fixture `tests/guard/test_replay.py` feeds to `observe.observation_from_trace` + `judge`.
"""

from __future__ import annotations

import json
import sys
import time

import torch

from kernelpilot.guard import timed
from kernelpilot.timing.callables import time_factory
from kernelpilot.timing.kernels import DEVICE_CATEGORIES, traced

CALLS = 5


def main() -> int:
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
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    print(
        f"recorded {len(keep)} device events; warm {doc['timed_warm_us']:.2f} us "
        f"cold {doc['timed_cold_us']:.2f} us"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
