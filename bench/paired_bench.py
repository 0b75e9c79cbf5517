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
The rows issue 24's acceptance still lacks (5 us rows with 8 allocations per side, the 12288^3 GEMM with a
verdict wall <= 20 s) in one device call: bash device/paired_bench_next.sh (see there).
Prints one row per comparison, the acceptance table (case, verdict, ratio, CI, wall, dropped for
throttling) and, last, `figure=value unit (median of N, spread ...)`. `--table-from FILE` prints the table
of a recorded run (no GPU needed).
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


def compare(
    torch: Any, fa: Callable[[], Any], fb: Callable[[], Any], max_wall_s: float, *, b_first: bool = False
) -> dict[str, Any]:
    """One paired compare of two factories (A's inputs allocated first, or B's with `b_first`)."""
    t0 = time.perf_counter()
    if b_first:
        made_b = _closures(fb())
        a, b = paired.Side("A", _closures(fa())), paired.Side("B", made_b)
    else:
        made_a = _closures(fa())
        a, b = paired.Side("A", made_a), paired.Side("B", _closures(fb()))
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


WANT = {"self": "neutral", "self-b-first": "neutral", "slower": "regressed", "faster": "improved"}
WALL_BOUND_S = 20.0  # issue 24: a 1-5 ms kernel gets a verdict within ~20 s


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The acceptance table: one line per comparison, then per kernel and case how many verdicts were right,
    how many self-compare CIs contained 1.000 and were narrower than +-1 %, and the walls within 20 s."""
    out = [
        "| kernel | case | rep | verdict | ratio B/A | 95 % CI | CI half-width | wall s "
        "| dropped (throttle) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lo, hi = r["ratio_ci"]
        out.append(
            f"| {r['kernel']} | {r['case']} | {r.get('rep', '')} | {r['verdict']} "
            f"| {r['ratio_median']:.4f} | "
            f"{lo:.4f}-{hi:.4f} | {(hi - lo) / 2 / r['ratio_median']:.2%} | {r['wall_s']:.1f} | "
            f"{r['clocks']['dropped']} |"
        )
    out.append("")
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        for case, want in WANT.items():
            sel = [r for r in rows if r["kernel"] == kernel and r["case"] == case]
            if not sel:
                continue
            ok = sum(r["verdict"] == want for r in sel)
            walls = [r["wall_s"] for r in sel]
            line = (
                f"summary {kernel} {case}: {want} {ok}/{len(sel)}; wall {min(walls):.1f}-{max(walls):.1f} s, "
                f"<= {WALL_BOUND_S:g} s {sum(w <= WALL_BOUND_S for w in walls)}/{len(sel)}; dropped "
                f"{sum(r['clocks']['dropped'] for r in sel)}"
            )
            if case.startswith("self"):
                tight = sum(
                    r["ratio_ci"][0] <= 1 <= r["ratio_ci"][1]
                    and (r["ratio_ci"][1] - r["ratio_ci"][0]) / 2 < 0.01
                    for r in sel
                )
                line += f"; CI contains 1.000 and narrower than +-1 %: {tight}/{len(sel)}"
            out.append(line)
    return out


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
    ap.add_argument(
        "--b-first", action="store_true", help="also a self row with B's inputs allocated before A's"
    )
    ap.add_argument("--table-from", type=Path, default=None, help="print the table of a recorded run, exit")
    args = ap.parse_args()
    if args.table_from is not None:
        print("\n".join(table(json.loads(args.table_from.read_text())["rows"])))
        return 0
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
        if time.perf_counter() - start > args.deadline_s:
            print(f"deadline: skipped {name} (sizing)", flush=True)
            continue
        extra, probe_ratio = sized_extra(torch, factory, probe, 4.0)
        out[f"{name}_extra_elems"] = extra
        print(f"{name}: probe {probe} extra elements -> ratio {probe_ratio:.4f}; ~3 %: {extra}", flush=True)
        for rep in range(1, args.reps + 1):
            run_rep(torch, args, out, start, name, factory, extra, rep)
    lines = table(out["rows"])
    print("\n".join(lines), flush=True)
    out["table"] = lines
    names = [k[0] for k in kinds]
    last = "gemm12k" if "gemm12k" in names else (names[0] if names else "")  # the wall bound's kernel
    walls = [r["wall_s"] for r in out["rows"] if r["kernel"] == last]
    out["elapsed_s"] = time.perf_counter() - start
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    if walls:
        print(
            f"{last}_verdict_wall={statistics.median(walls):.2f} s (median of {len(walls)}, spread "
            f"{min(walls):.2f}-{max(walls):.2f} s)"
        )
    return 0


def run_rep(
    torch: Any, args: Any, out: dict[str, Any], start: float, name: str, factory: Any, extra: int, rep: int
) -> None:
    """One repetition of a kernel's cases (self, slower, faster; and self with B allocated first when
    asked), each a fresh pair of allocations; a case that would start past the deadline is skipped."""
    cases: list[tuple[str, Any, Any, bool]] = [
        ("self", factory(torch, 0, 10 + rep), factory(torch, 0, 20 + rep), False),
        ("slower", factory(torch, 0, 30 + rep), factory(torch, extra, 40 + rep), False),
        ("faster", factory(torch, extra, 50 + rep), factory(torch, 0, 60 + rep), False),
    ]
    if args.b_first:
        cases.append(("self-b-first", factory(torch, 0, 70 + rep), factory(torch, 0, 80 + rep), True))
    for case, fa, fb, b_first in cases:
        if time.perf_counter() - start > args.deadline_s:
            print(f"deadline: skipped {name} {case} rep {rep}", flush=True)
            continue
        r = compare(torch, fa, fb, args.max_wall_s, b_first=b_first)
        r.pop("a_samples"), r.pop("b_samples")
        out["rows"].append({"kernel": name, "case": case, "rep": rep, **r})
        print(row_line(f"{name} {case}", rep, r), flush=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
