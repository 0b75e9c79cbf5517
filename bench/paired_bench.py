"""Paired A/B verdicts on a power-managed GPU (issue 24's acceptance table).

Runs, `--reps` times each, through `kernelpilot.timing.compare.compare_sides` (the engine of
`kernelpilot compare` and of `eval` for time_spec tasks), cold timing, min_effect 1 %:
  (a) an 8192^3 bf16 GEMM against itself (separate inputs) -> neutral, CI containing 1, narrower than +-1 %
  (b) the GEMM against the GEMM plus a copy kernel sized to ~3 % -> regressed; the reverse -> improved
  (c) the same on a ~5 us memory-bound kernel (y = 2x, fp32); its slower variant writes ~3 % more elements
The ~3 % extra work is sized by measurement first (a paired compare with a larger extra, scaled linearly).
Before the table, the GEMM runs back-to-back for `--trace-s` seconds while NVML is read every 5 ms; the
readings are written to `--trace` (replayed by tests/timing/test_clocks.py) and summarised.

Usage (GPU machine): python bench/paired_bench.py --reps 5 --out res.json --trace trace.json
Prints one row per comparison and, last, `figure=value unit (median of N, spread ...)`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from kernelpilot.timing import clocks, paired
from kernelpilot.timing.compare import compare_sides
from kernelpilot.timing.models import CompareRequest

N_GEMM = 8192
N_MEM = 1 << 20  # 1 Mi fp32 elements: 4 MiB read + 4 MiB written, ~5 us with the L2 flushed (H100)


def gemm_factory(
    torch: Any, extra_elems: int = 0, seed: int = 0, n: int = N_GEMM
) -> Callable[[], Callable[[], Any]]:
    def make() -> Callable[[], Any]:
        g = torch.Generator(device="cuda").manual_seed(seed)
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        if extra_elems <= 0:
            return lambda: torch.mm(a, b, out=c)
        src = torch.randn(extra_elems, device="cuda", dtype=torch.bfloat16, generator=g)
        dst = torch.empty_like(src)

        def run() -> Any:
            torch.mm(a, b, out=c)
            dst.copy_(src)  # the fixed extra kernel: a copy of known size
            return c

        return run

    return make


def mem_factory(
    torch: Any, extra_elems: int = 0, seed: int = 0, rotate: int = 1, base: int = N_MEM
) -> Callable[[], list[Callable[[], Any]]]:
    """y = 2x over `base` fp32 elements (+ `extra_elems` more written: the slower variant), on `rotate`
    input sets of their own (each its own allocation)."""

    def one(g: Any) -> Callable[[], Any]:
        x = torch.randn(base + extra_elems, device="cuda", dtype=torch.float32, generator=g)
        y = torch.empty_like(x)
        head = y[:base]  # same output shape as the base variant; the extra elements are the extra work

        def run() -> Any:
            torch.mul(x, 2.0, out=y)
            return head

        return run

    def make() -> list[Callable[[], Any]]:
        g = torch.Generator(device="cuda").manual_seed(seed)
        return [one(g) for _ in range(rotate)]

    return make


def _closures(made: Any) -> list[Callable[[], Any]]:
    return list(made) if isinstance(made, list) else [made]


def compare(torch: Any, fa: Callable[[], Any], fb: Callable[[], Any], max_wall_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    a = paired.Side("A", _closures(fa()))
    b = paired.Side("B", _closures(fb()))
    req = CompareRequest(a="A", b="B", timing="cold", max_wall_s=max_wall_s, device="cuda")
    res = compare_sides(a, b, req, torch, started=t0)
    del a, b
    torch.cuda.empty_cache()
    return res.model_dump(mode="json")


def sized_extra(
    torch: Any, factory: Any, probe: int, max_wall_s: float, target: float = 0.03
) -> tuple[int, float]:
    """Extra elements for a `target` slowdown: a paired compare with `probe` extra elements, scaled."""
    r = compare(torch, factory(torch, 0, 1), factory(torch, probe, 2), max_wall_s)
    slow = r["ratio_median"] - 1.0
    n = int(probe * target / slow) if slow > 0 else probe
    return max(1024, n), r["ratio_median"]


def record_trace(torch: Any, seconds: float, path: Path) -> dict[str, Any]:
    """The GEMM back-to-back for `seconds` while NVML is read every 5 ms; readings written to `path`."""
    run = gemm_factory(torch)()
    source = clocks.open_source(torch)
    if source is None:
        return {"error": "no NVML/amdsmi source"}
    sampler = clocks.ClockSampler(source, 0.005)
    t0 = time.perf_counter()
    launches = 0
    with sampler:
        while time.perf_counter() - t0 < seconds:
            for _ in range(20):
                run()
            launches += 20
            torch.cuda.synchronize()
    t1 = time.perf_counter()
    rs = sampler.readings()
    doc = {
        "what": f"{N_GEMM}^3 bf16 torch.mm back-to-back for {seconds:g} s ({launches} launches), "
        "NVML read every 5 ms",
        "device": source.device,
        "sm_mhz_rated_max": source.max_sm_mhz,
        "power_limit_w": source.power_limit_w,
        "period_s": 0.005,
        "columns": ["t_s (from start)", "sm_mhz", "power_w", "temp_c", "reasons (NVML mask)"],
        "readings": [[round(r.t_s - t0, 6), r.sm_mhz, r.power_w, r.temp_c, r.reasons] for r in rs],
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    source.close()
    path.write_text(json.dumps(doc) + "\n")
    ev = clocks.evidence(sampler, [(t0, t1)], clocks.DropLog(), clocks.ThrottlePolicy())
    return {"launches": launches, "seconds": t1 - t0, "evidence": ev.model_dump(mode="json")}


def allocation_study(torch: Any, reps: int, max_wall_s: float, out: dict[str, Any]) -> None:
    """Is a self-comparison's offset the method's (position in A,B,B,A) or the two allocations'? The same
    closure on both sides; two allocations X, Y compared both ways (a position bias keeps its sign, an
    allocation difference flips); then 8 allocations per side (rotation averages allocation effects)."""
    rows = out.setdefault("study", [])

    def run(case: str, kernel: str, fa: Any, fb: Any) -> None:
        r = compare(torch, fa, fb, max_wall_s)
        r.pop("a_samples"), r.pop("b_samples")
        rows.append({"kernel": kernel, "case": case, **r})
        print(row_line(f"{kernel} {case}", len(rows), r), flush=True)

    for kernel, base in (("mem5us", N_MEM), ("mem4m", 4 * N_MEM)):
        shared = mem_factory(torch, 0, 100, base=base)()
        for _ in range(reps):
            run("same closure", kernel, lambda shared=shared: shared, lambda shared=shared: shared)
        x, y = mem_factory(torch, 0, 101, base=base)(), mem_factory(torch, 0, 102, base=base)()
        for _ in range(reps):
            run("X vs Y", kernel, lambda x=x: x, lambda y=y: y)
            run("Y vs X", kernel, lambda y=y: y, lambda x=x: x)
        for rep in range(reps):
            run(
                "8 allocs vs 8",
                kernel,
                mem_factory(torch, 0, 110 + rep, 8, base),
                mem_factory(torch, 0, 120 + rep, 8, base),
            )


def row_line(kind: str, rep: int, r: dict[str, Any]) -> str:
    lo, hi = r["ratio_ci"]
    c = r["clocks"]
    return (
        f"{kind:<22} rep {rep}  {r['verdict']:<9} ratio {r['ratio_median']:.4f} CI [{lo:.4f}, {hi:.4f}] "
        f"(+-{(hi - lo) / 2 / r['ratio_median'] * 100:.2f} %)  pairs {r['pairs']:>3}  "
        f"wall {r['wall_s']:.1f} s  "
        f"dropped {c['dropped']}  A {r['a_stats']['median']:.2f} us  B {r['b_stats']['median']:.2f} us  "
        f"SM {c.get('sm_mhz_min')}-{c.get('sm_mhz_max')} MHz held={c.get('clock_held')}"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("paired_bench.json"))
    ap.add_argument("--trace", type=Path, default=None)
    ap.add_argument("--trace-s", type=float, default=25.0)
    ap.add_argument("--max-wall-s", type=float, default=10.0, help="per comparison's timing loop")
    ap.add_argument("--deadline-s", type=float, default=480.0, help="stop starting rows after this")
    ap.add_argument("--kernels", default="gemm,mem5us", help="which kernels' rows (gemm, gemm12k, mem5us)")
    ap.add_argument("--rotate", type=int, default=1, help="mem5us rows: input sets (allocations) per side")
    ap.add_argument("--study", action="store_true", help="run the allocation study (allocation_study)")
    args = ap.parse_args()
    import torch

    start = time.perf_counter()
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    out["args"] = vars(args) | {"out": str(args.out), "trace": str(args.trace)}
    if args.study:
        allocation_study(torch, 3, args.max_wall_s, out)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    if args.trace is not None:
        out["trace"] = record_trace(torch, args.trace_s, args.trace)
        print("trace:", out["trace"].get("evidence", {}).get("note", out["trace"]), flush=True)
    rot = args.rotate

    def mem(torch: Any, extra: int = 0, seed: int = 0) -> Any:
        return mem_factory(torch, extra, seed, rot)

    def gemm12k(torch: Any, extra: int = 0, seed: int = 0) -> Any:
        return gemm_factory(torch, extra, seed, 12288)  # ~5 ms: the long end of "1-5 ms"

    every = [("gemm", gemm_factory, 16 << 20), ("gemm12k", gemm12k, 64 << 20), ("mem5us", mem, N_MEM // 5)]
    kinds = [k for name in args.kernels.split(",") for k in every if k[0] == name]  # in the order asked
    for name, factory, probe in kinds:
        extra, probe_ratio = sized_extra(torch, factory, probe, 4.0)
        out[f"{name}_extra_elems"] = extra
        print(f"{name}: probe {probe} extra elements -> ratio {probe_ratio:.4f}; ~3 %: {extra}", flush=True)
        for rep in range(1, args.reps + 1):
            cases = [
                ("self", factory(torch, 0, 10 + rep), factory(torch, 0, 20 + rep)),
                ("slower", factory(torch, 0, 30 + rep), factory(torch, extra, 40 + rep)),
                ("faster", factory(torch, extra, 50 + rep), factory(torch, 0, 60 + rep)),
            ]
            for case, fa, fb in cases:
                if time.perf_counter() - start > args.deadline_s:
                    print(f"deadline: skipped {name} {case} rep {rep}", flush=True)
                    continue
                r = compare(torch, fa, fb, args.max_wall_s)
                r.pop("a_samples"), r.pop("b_samples")
                out["rows"].append({"kernel": name, "case": case, "rep": rep, **r})
                print(row_line(f"{name} {case}", rep, r), flush=True)
                args.out.write_text(json.dumps(out, indent=1) + "\n")
    want = {"self": "neutral", "slower": "regressed", "faster": "improved"}
    for name, _, _ in kinds:
        for case, v in want.items():
            rows = [r for r in out["rows"] if r["kernel"] == name and r["case"] == case]
            ok = sum(r["verdict"] == v for r in rows)
            extra_ok = ""
            if case == "self":
                tight = sum(
                    r["ratio_ci"][0] <= 1 <= r["ratio_ci"][1]
                    and (r["ratio_ci"][1] - r["ratio_ci"][0]) / 2 < 0.01
                    for r in rows
                )
                extra_ok = f", CI contains 1 and narrower than +-1 %: {tight}/{len(rows)}"
            print(f"summary {name} {case}: {v} {ok}/{len(rows)}{extra_ok}")
    first = kinds[0][0] if kinds else ""
    walls = [r["wall_s"] for r in out["rows"] if r["kernel"] == first]
    out["elapsed_s"] = time.perf_counter() - start
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    if walls:
        print(
            f"{first}_verdict_wall={statistics.median(walls):.2f} s (median of {len(walls)}, spread "
            f"{min(walls):.2f}-{max(walls):.2f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
