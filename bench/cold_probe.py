"""What a cold (L2-flushed) launch reads on this machine, by every timer at hand (issue 33).

Why: the cold figure of `kernelpilot time` (10th percentile of event pairs around flushed launches, net of
an empty event pair) agreed with ncu's gpu__time_duration on a one-GPU H100 host and read 0.6-1.0 µs under
it on a two-GPU H100 host, where the empty pair read 2.9 µs instead of 1.2 µs. This records, on any machine,
everything needed to choose a cold method that does not depend on the host, launch by launch:

- event pairs: empty (behind a spin hold), empty after a flush, around the flush alone, and around each
  kernel after a flush (`flush -> start -> kernel -> end`), without any profiler in the process;
- %globaltimer brackets: `flush -> stamp -> kernel -> stamp` (a one-thread kernel writes %globaltimer),
  the empty bracket, and the timer's update step;
- CUPTI kernel start->end (torch.profiler) of the same cold loop, with the event pair of each launch;
- warm: CUPTI durations and event pairs of 64 back-to-back launches;
- `kernelpilot time` cold (events, trace) and warm of the ten test kernels as the code stands;
- ncu gpu__time_duration (`--cache-control all --clock-control none`) of every kernel, in one ncu process.

Kernels: bench/cold_probe_kernels.py (issue 33's five, five new ones, a null kernel and two spins).
Every step is independent (a failure is recorded in `errors`, the rest go on) and the JSON is rewritten
after each step. Usage: python bench/cold_probe.py --out DIR [--budget-s 160] (wrapper:
device/cold_probe_next.sh). Prints a summary table last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "server"))

N_COLD = 256  # flushed launches per kernel and timer
BATCH = 32  # items enqueued behind one hold


def q(xs: list[float], p: float) -> float:
    if not xs:
        return math.nan
    s = sorted(xs)
    pos = p * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def dist(xs: list[float]) -> dict[str, Any]:
    """Quantiles of a list (µs) plus the rounded values."""
    return {
        "n": len(xs),
        "p05": q(xs, 0.05),
        "p10": q(xs, 0.10),
        "p25": q(xs, 0.25),
        "p50": q(xs, 0.5),
        "p90": q(xs, 0.9),
        "values": [round(v, 4) for v in xs],
    }


class Probe:
    def __init__(self, out: Path, budget_s: float) -> None:
        import torch

        from kernelpilot.timing.gpu import SpinHold, make_flush

        self.torch = torch
        self.out = out
        self.t0 = time.perf_counter()
        self.budget_s = budget_s
        self.hold = SpinHold(torch)
        self.flush, self.flush_bytes = make_flush(torch)
        self.stream = torch.cuda.current_stream()
        props = torch.cuda.get_device_properties(0)
        self.data: dict[str, Any] = {
            "meta": {
                "device": torch.cuda.get_device_name(),
                "uuid": str(getattr(props, "uuid", "")),
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "sm_count": props.multi_processor_count,
                "l2_bytes": getattr(props, "L2_cache_size", None),
                "flush_bytes": self.flush_bytes,
                "hold_cycles_per_us": self.hold.cycles_per_us,
                "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "device_count": torch.cuda.device_count(),
                "pid": os.getpid(),
                "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            },
            "global": {},
            "kernels": {},
            "kp": {},
            "ncu": {},
            "errors": [],
            "step_s": {},
        }
        self.fns: dict[str, Callable[[], Any]] = {}
        self.per_item_us = 40.0

    # ---- bookkeeping ----
    def left_s(self) -> float:
        return self.budget_s - (time.perf_counter() - self.t0)

    def save(self) -> None:
        (self.out / "probe.json").write_text(json.dumps(self.data, indent=0, default=str))

    def step(self, name: str, fn: Callable[[], Any], need_s: float = 0.0) -> Any:
        if self.left_s() < need_s:
            self.data["errors"].append(f"{name}: skipped, {self.left_s():.0f} s of the budget left")
            print(f"[skip] {name}", flush=True)
            return None
        t = time.perf_counter()
        try:
            return fn()
        except Exception as exc:  # every step independent: record and go on
            self.data["errors"].append(
                f"{name}: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"
            )
            print(f"[error] {name}: {type(exc).__name__}: {exc}", flush=True)
            try:
                self.torch.cuda.synchronize()
            except Exception as exc2:  # the device is gone: nothing else can run
                self.data["errors"].append(f"after {name}: synchronize failed: {exc2}")
            return None
        finally:
            self.data["step_s"][name] = round(time.perf_counter() - t, 2)
            self.save()

    def kern(self, name: str) -> dict[str, Any]:
        return self.data["kernels"].setdefault(name, {})

    # ---- primitives ----
    def held(
        self, n: int, enqueue: Callable[[int], Any], per_item_us: float | None = None
    ) -> tuple[list[Any], list[bool]]:
        """Enqueue n items in batches behind spin holds; every item is kept with its batch's caught-up flag
        (True: the GPU reached the batch before the host finished it, so gaps are possible). The hold is
        sized from the host's time per item of the previous call (or `per_item_us`)."""
        torch = self.torch
        items: list[Any] = []
        flags: list[bool] = []
        per_item = per_item_us or self.per_item_us
        i = 0
        while i < n:
            b = min(BATCH, n - i)
            self.hold.hold(min(20_000.0, 3.0 * per_item * b + 100.0))
            he = torch.cuda.Event()
            he.record()
            t = time.perf_counter()
            items += [enqueue(i + j) for j in range(b)]
            dt = (time.perf_counter() - t) * 1e6 / b
            caught = bool(he.query())
            per_item = 2.0 * max(per_item, dt) if caught else max(0.5 * per_item, dt)
            flags += [caught] * b
            i += b
        torch.cuda.synchronize()
        if per_item_us is None:
            self.per_item_us = per_item
        return items, flags

    def pair(self) -> tuple[Any, Any]:
        ev = self.torch.cuda.Event
        return ev(enable_timing=True), ev(enable_timing=True)

    def pairs_us(
        self,
        n: int,
        body: Callable[[], None],
        *,
        flush_first: bool,
        around_flush: bool = False,
        per_item_us: float | None = None,
    ) -> dict[str, Any]:
        def enq(_: int) -> tuple[Any, Any]:
            if flush_first:
                self.flush()
            s, e = self.pair()
            s.record(self.stream)
            if around_flush:
                self.flush()
            body()
            e.record(self.stream)
            return s, e

        got, flags = self.held(n, enq, per_item_us)
        vals = [s.elapsed_time(e) * 1000.0 for s, e in got]
        kept = [v for v, f in zip(vals, flags, strict=True) if not f]
        d = dist(kept)
        d["caught_up"] = sum(flags)
        return d

    def stamps(self) -> tuple[Any, Any, Any]:
        from cold_probe_kernels import cupy_module, on_torch_stream

        cupy, mod = cupy_module()
        stamp = mod.get_function("kp_stamp")
        import numpy as np

        buf = cupy.zeros(2 * N_COLD + 2, dtype=cupy.uint64)

        def at(i: int) -> None:
            with on_torch_stream(cupy):
                stamp((1,), (1,), (buf, np.int32(i)))

        return cupy, buf, at

    def bracket_us(self, n: int, body: Callable[[], None], *, flush_first: bool) -> dict[str, Any]:
        _, buf, at = self.stamps()

        def enq(i: int) -> None:
            if flush_first:
                self.flush()
            at(2 * i)
            body()
            at(2 * i + 1)

        _, flags = self.held(n, enq)
        raw = buf.get().astype("int64")
        vals = [(int(raw[2 * i + 1]) - int(raw[2 * i])) / 1000.0 for i in range(n)]
        kept = [v for v, f in zip(vals, flags, strict=True) if not f]
        d = dist(kept)
        d["caught_up"] = sum(flags)
        return d

    def other_names(self) -> set[str]:
        """Kernel names of the flush and the hold (to tell them from the timed kernel in a trace)."""
        from kernelpilot.timing.kernels import device_events, traced

        def work() -> None:
            self.flush()
            self.hold.hold(10.0)

        _, _, at = self.stamps()
        names = {n for n, _, _ in device_events(traced(self.torch, work, cpu=False))}
        names |= {n for n, _, _ in device_events(traced(self.torch, lambda: at(0), cpu=False))}
        return names

    # ---- steps ----
    def globals_(self, tag: str) -> None:
        g = self.data["global"]
        nothing = lambda: None  # noqa: E731
        g[f"empty_pair{tag}"] = self.pairs_us(N_COLD, nothing, flush_first=False)
        g[f"empty_pair_after_flush{tag}"] = self.pairs_us(N_COLD, nothing, flush_first=True)
        g[f"pair_around_flush{tag}"] = self.pairs_us(
            N_COLD // 2, nothing, flush_first=False, around_flush=True
        )
        g[f"empty_bracket_after_flush{tag}"] = self.bracket_us(N_COLD, nothing, flush_first=True)
        g[f"empty_bracket{tag}"] = self.bracket_us(N_COLD, nothing, flush_first=False)

    def globaltimer_step(self) -> None:
        from cold_probe_kernels import cupy_module, on_torch_stream

        cupy, mod = cupy_module()
        out = cupy.zeros(64, dtype=cupy.uint64)
        import numpy as np

        with on_torch_stream(cupy):
            mod.get_function("kp_gt_res")((1,), (1,), (out, np.int32(64)))
        self.torch.cuda.synchronize()
        deltas = [int(v) for v in out.get()]
        self.data["global"]["globaltimer_step_ns"] = deltas
        print(
            f"globaltimer steps (ns): median {statistics.median(deltas)} min {min(deltas)} max {max(deltas)}"
        )

    def build(self, names: list[str]) -> None:
        import cold_probe_kernels as kb

        for n in names:
            try:
                fn = kb.make(n)
                for _ in range(5):
                    fn()
                self.torch.cuda.synchronize()
                self.fns[n] = fn
            except Exception as exc:  # one kernel that cannot build must not lose the others
                self.data["errors"].append(f"build {n}: {type(exc).__name__}: {exc}")
                print(f"[error] build {n}: {exc}", flush=True)

    def unprofiled(self, name: str) -> None:
        fn = self.fns[name]
        k = self.kern(name)
        k["event_pair_cold"] = self.pairs_us(N_COLD, fn, flush_first=True)
        k["bracket_cold"] = self.bracket_us(N_COLD, fn, flush_first=True)
        k["bracket_warm"] = self.bracket_us(N_COLD // 4, fn, flush_first=False)
        inner = 64

        def many() -> None:
            for _ in range(inner):
                fn()

        k["event_pair_noflush"] = self.pairs_us(N_COLD // 2, fn, flush_first=False)
        w = self.pairs_us(8, many, flush_first=False, per_item_us=inner * 20.0)
        k["event_warm_per_launch_us"] = w["p50"] / inner

    def profiled(self, name: str, other: set[str]) -> None:
        from kernelpilot.timing.kernels import device_events, traced

        fn = self.fns[name]
        k = self.kern(name)
        box: dict[str, Any] = {}

        def work() -> None:
            def enq(_: int) -> tuple[Any, Any]:
                self.flush()
                s, e = self.pair()
                s.record(self.stream)
                fn()
                e.record(self.stream)
                return s, e

            box["got"], box["flags"] = self.held(N_COLD, enq)

        evs = device_events(traced(self.torch, work, cpu=False))
        mine = [(i, e) for i, e in enumerate(evs) if e[0] not in other]
        pairs = [s.elapsed_time(e) * 1000.0 for s, e in box["got"]]
        flags = box["flags"]
        kc = len(mine) // N_COLD if len(mine) % N_COLD == 0 else 0
        k["cupti_names"] = sorted({e[0][:100] for _, e in mine})
        k["cupti_kernels_per_launch"] = kc
        k["event_pair_cold_profiled"] = dist([v for v, f in zip(pairs, flags, strict=True) if not f])
        if kc == 0:
            k["cupti_cold_error"] = f"{len(mine)} non-flush device events for {N_COLD} launches"
            return
        durs, gaps, diffs = [], [], []
        for j in range(N_COLD):
            grp = mine[j * kc : (j + 1) * kc]
            d = sum(e[2] for _, e in grp)
            first_i, first = grp[0]
            prev = evs[first_i - 1] if first_i > 0 else None
            durs.append(d)
            if prev is not None:
                gaps.append(first[1] - (prev[1] + prev[2]))
            if not flags[j]:
                diffs.append(pairs[j] - d)
        k["cupti_cold"] = dist(durs)
        k["cupti_gap_after_flush"] = dist(gaps)
        k["pair_minus_cupti_same_launch"] = dist(diffs)

        def warm() -> None:
            self.hold.hold(2000.0)
            for _ in range(64):
                fn()

        wevs = [e for e in device_events(traced(self.torch, warm, cpu=False)) if e[0] not in other]
        if kc:
            per = [sum(e[2] for e in wevs[j * kc : (j + 1) * kc]) for j in range(len(wevs) // kc)]
            k["cupti_warm"] = dist(per)

    def kp_times(self, name: str) -> None:
        from kernelpilot.timing.core import time_kernel
        from kernelpilot.timing.models import TimeRequest

        spec = f"{HERE / 'cold_probe_kernels.py'}:make_{name}"
        r = time_kernel(TimeRequest(spec=spec, runs=200, kernels=False, workdir=str(HERE)))
        row: dict[str, Any] = {
            "event_floor_us": r.event_floor_us,
            "cold_us": r.cold.stats.median if r.cold else None,
            "cold_cv": r.cold.stats.cv if r.cold else None,
            "cold_note": r.cold.method_note if r.cold else None,
            "warm_us": r.warm.stats.median if r.warm else None,
            "warm_cv": r.warm.stats.cv if r.warm else None,
            "warnings": r.machine.warnings,
        }
        self.data["kp"][name] = row

    def kp_trace(self, name: str) -> None:
        from kernelpilot.timing.core import time_kernel
        from kernelpilot.timing.models import TimeRequest

        spec = f"{HERE / 'cold_probe_kernels.py'}:make_{name}"
        r = time_kernel(
            TimeRequest(
                spec=spec, runs=200, timing="cold", cold_timer="trace", kernels=False, workdir=str(HERE)
            )
        )
        assert r.cold is not None
        self.data["kp"].setdefault(name, {})["cold_trace_us"] = r.cold.stats.median
        self.data["kp"][name]["cold_trace_method"] = r.cold.method

    def ncu(self, names: list[str], timeout_s: float) -> None:
        exe = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
        argv = [exe, "--profile-from-start", "off", "--cache-control", "all", "--clock-control", "none",
                "--metrics", "gpu__time_duration.sum", "--csv",
                sys.executable, str(HERE / "cold_probe_kernels.py"),
                "--ncu-child", ",".join(names)]  # fmt: skip
        self.data["ncu"]["argv"] = argv
        t = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        self.data["ncu"]["wall_s"] = round(time.perf_counter() - t, 1)
        self.data["ncu"]["rc"] = p.returncode
        (self.out / "ncu.csv").write_text(p.stdout + "\n==== stderr\n" + p.stderr[-4000:])
        from kernelpilot.timing.calibration import gpu_time_rows

        seq = gpu_time_rows(p.stdout)
        blocks: list[list[tuple[str, float]]] = [[]]
        for nm, v in seq:
            if "kp_marker" in nm:
                blocks.append([])
            else:
                blocks[-1].append((nm, v))
        from cold_probe_kernels import LAUNCHES

        res = {}
        for name, blk in zip(names, blocks, strict=False):
            kc = max(1, len(blk) // LAUNCHES) if blk else 1
            per = [sum(v for _, v in blk[j * kc : (j + 1) * kc]) for j in range(len(blk) // kc)]
            res[name] = {
                "kernels_per_launch": kc,
                "names": sorted({nm[:100] for nm, _ in blk}),
                "durations_us": per,
                "median_us": statistics.median(per[3:]) if len(per) > 3 else math.nan,
            }
        self.data["ncu"]["kernels"] = res
        if p.returncode != 0 or not seq:
            raise RuntimeError(f"ncu rc={p.returncode}, {len(seq)} rows; stderr tail: {p.stderr[-600:]}")


def summary(data: dict[str, Any]) -> list[str]:
    g = data["global"]
    floor = g.get("empty_pair", {}).get("p50", math.nan)
    lines = [
        "device {device} ({device_count} visible) torch {torch}".format(**data["meta"]),
        "empty pair p50 {:.3f} (after flush {:.3f}; after profiling {:.3f}) | empty bracket p50 {:.3f} "
        "(after flush {:.3f}) | pair around flush p50 {:.3f}".format(
            floor,
            g.get("empty_pair_after_flush", {}).get("p50", math.nan),
            g.get("empty_pair_after_prof", {}).get("p50", math.nan),
            g.get("empty_bracket", {}).get("p50", math.nan),
            g.get("empty_bracket_after_flush", {}).get("p50", math.nan),
            g.get("pair_around_flush", {}).get("p50", math.nan),
        ),
        f"{'kernel':26s}"
        + "".join(
            f" {h:>7s}"
            for h in [
                "ncu",
                "cupti",
                "ncu-cu",
                "evp10",
                "ncu-ev",
                "ev-cu",
                "brp10",
                "ncu-br",
                "kp_cold",
                "kp-ncu",
                "kp_tr",
                "cu_warm",
                "kp_warm",
            ]
        ),
    ]
    nan = {"p10": math.nan, "p50": math.nan}
    for name, k in data["kernels"].items():
        ncu = data.get("ncu", {}).get("kernels", {}).get(name, {}).get("median_us", math.nan)
        cu = k.get("cupti_cold", nan)["p50"]
        ev = k.get("event_pair_cold", nan)["p10"]
        br = k.get("bracket_cold", nan)["p10"]
        dd = k.get("pair_minus_cupti_same_launch", nan)["p50"]
        kp = data["kp"].get(name, {})
        kc = kp.get("cold_us") or math.nan
        lines.append(
            f"{name:26s} {ncu:7.2f} {cu:7.2f} {ncu - cu:+7.2f} {ev:7.2f} {ncu - ev:+7.2f} {dd:+7.2f} "
            f"{br:7.2f} {ncu - br:+7.2f} {kc:7.2f} {kc - ncu:+7.2f} "
            f"{kp.get('cold_trace_us') or math.nan:7.2f} "
            f"{k.get('cupti_warm', nan)['p50']:7.2f} {kp.get('warm_us') or math.nan:7.2f}"
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "cold_probe_out"))
    ap.add_argument("--budget-s", type=float, default=160.0)
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    args = ap.parse_args()
    import faulthandler

    faulthandler.dump_traceback_later(args.budget_s + 30, exit=False)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import cold_probe_kernels as kb

    names = [*kb.PROBE, *kb.ISSUE_FIVE, *kb.NEW_FIVE]
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    tests = [n for n in names if n not in kb.PROBE]
    p = Probe(out, args.budget_s)
    p.step("globaltimer", p.globaltimer_step)
    p.step("build", lambda: p.build(names))
    # unprofiled first: no profiler has touched this process yet
    p.step("globals", lambda: p.globals_(""))
    for n in list(p.fns):
        p.step(f"unprofiled {n}", lambda n=n: p.unprofiled(n), need_s=90)
    other = p.step("other names", p.other_names) or set()
    p.data["global"]["flush_hold_names"] = sorted(other)
    for n in list(p.fns):
        p.step(f"profiled {n}", lambda n=n: p.profiled(n, other), need_s=60)
    p.step("globals after profiling", lambda: p.globals_("_after_prof"))
    p.step("ncu", lambda: p.ncu([n for n in names if n in p.fns], max(60.0, p.left_s())))
    for n in tests:  # kernelpilot as it stands (events cold + warm, then trace cold), while time is left
        if n in p.fns:
            p.step(f"kp {n}", lambda n=n: p.kp_times(n), need_s=5)
    for n in tests:
        if n in p.fns:
            p.step(f"kp trace {n}", lambda n=n: p.kp_trace(n), need_s=5)
    lines = summary(p.data)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"errors: {len(p.data['errors'])}; wall {time.perf_counter() - p.t0:.0f} s")
    for e in p.data["errors"]:
        print("  " + e.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
