"""Benchmark: fuzz every file reader with mutated real inputs and count what escapes untyped.

Usage: python bench/fuzz_readers.py [--cases N] [--only NAME ...]
For each format in tests/fuzz/fuzz_targets.py (cubin, fatbin/host executable, HSACO, offload bundle, ncu
raw/details/source CSV, rocprofv3 CSV/JSON, experiment JSONL, workspace memory JSON, task.json), a fresh
process runs N hypothesis-generated mutations (truncation, byte flips, insertions, deletions; several per
input) of the format's real seed files through the same core function the CLI calls, and reports: cases
run, uncaught exceptions (anything not a `KernelpilotError`), the slowest input, the process's peak RSS,
the most memory one input made the reader allocate (tracemalloc peak during the call, after the first
WARMUP cases) absolute and per input byte, and the largest input fed. The first few
uncaught exceptions are printed with their last frames.
Last line: figure=<uncaught exceptions in all formats> (cases, slowest input, most memory per input byte).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import traceback
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO / "tests" / "fuzz"))

SHOW = 3  # uncaught exceptions printed per format
WARMUP = 100  # cases per format not counted in the memory figures (still counted for exceptions)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def fuzz_one(name: str, cases: int, seed: int) -> dict[str, Any]:
    """In a fresh process: run `cases` mutations of format `name`; plain-value report."""
    from fuzz_targets import BY_NAME, apply, check, mutations
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    target = BY_NAME[name]
    with tempfile.TemporaryDirectory(prefix="kp-fuzz-") as tmp:
        for s in target.seeds:  # warm: imports, caches; the RSS after this is the baseline
            sub = Path(tmp) / f"seed-{s.name}"
            sub.mkdir()
            target.read(s.read_bytes(), sub)
    base_rss = _rss_mb()
    times: list[float] = []
    stray: list[str] = []
    kinds: dict[str, int] = {}
    outcomes = {"ok": 0, "typed": 0}
    largest = 0
    peak_bytes = 0  # most memory one input made the reader allocate (Python heap, traced)
    worst_ratio = 0.0  # ... per byte of that input (inputs under 1 KiB counted as 1 KiB)
    worst: list[bytes] = []  # the input with the highest ratio, measured again warm at the end
    tracemalloc.start()

    @hseed(seed)
    @settings(
        max_examples=cases,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @given(case=mutations(target))
    def run(case: tuple[Path, list[Any]]) -> None:
        data = apply(*case)
        nonlocal largest, peak_bytes, worst_ratio
        largest = max(largest, len(data))
        with tempfile.TemporaryDirectory(prefix="kp-fuzz-") as tmp:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            t = time.perf_counter()
            outcome = check(target, data, Path(tmp))
            times.append(time.perf_counter() - t)
            used = tracemalloc.get_traced_memory()[1] - before
        if len(times) > WARMUP:  # the first cases import the error paths' modules, compile regexes, ...
            if used / max(len(data), 1024) > worst_ratio:
                worst_ratio, worst[:] = used / max(len(data), 1024), [data]
            peak_bytes = max(peak_bytes, used)
        if isinstance(outcome, str):
            outcomes[outcome] += 1
        else:
            exc = outcome
            key = f"{type(exc).__name__}"
            kinds[key] = kinds.get(key, 0) + 1
            if len(stray) < SHOW:
                frames = "".join(traceback.format_tb(exc.__traceback__)[-3:])
                stray.append(f"{type(exc).__name__}: {str(exc)[:300]}\n{frames}")

    run()
    first_ratio = worst_ratio
    if worst:  # again, twice: a first-time cost (a lazy import on a rare error path) is not the input's
        for _ in range(2):
            with tempfile.TemporaryDirectory(prefix="kp-fuzz-") as tmp:
                before = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                check(target, worst[0], Path(tmp))
                used = tracemalloc.get_traced_memory()[1] - before
        worst_ratio = used / max(len(worst[0]), 1024)
    return {
        "first_ratio": first_ratio,
        "name": name,
        "cases": len(times),
        "uncaught": sum(kinds.values()),
        "ok": outcomes["ok"],
        "kinds": kinds,
        "examples": stray,
        "max_s": max(times) if times else 0.0,
        "median_s": statistics.median(times) if times else 0.0,
        "base_rss_mb": base_rss,
        "peak_rss_mb": _rss_mb(),
        "largest_input": largest,
        "peak_alloc_mb": peak_bytes / 2**20,
        "worst_ratio": worst_ratio,
    }


def _child(name: str, cases: int, seed: int, q: Any) -> None:
    try:
        q.put(fuzz_one(name, cases, seed))
    except BaseException as exc:  # report a harness failure instead of hanging the parent
        q.put({"name": name, "error": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000, help="mutations per format (default 10000)")
    ap.add_argument("--only", nargs="*", help="format names to run (default: all)")
    ap.add_argument("--seed", type=int, default=20261123)
    args = ap.parse_args()
    from fuzz_targets import TARGETS

    names = [t.name for t in TARGETS if not args.only or t.name in args.only]
    print(
        f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(f"inputs: {args.cases} hypothesis mutations per format of the seeds in tests/fuzz/fuzz_targets.py")
    print(
        "columns: cases run, inputs read without error, uncaught exceptions, median and max seconds per "
        "input, the process's peak RSS (MB, hypothesis included), the most one input made the reader "
        "allocate (MB, tracemalloc), the worst input's allocation per input byte measured again warm (x), "
        "the largest input (bytes)"
    )
    print(
        f"{'format':<18}{'cases':>7}{'read ok':>8}{'uncaught':>9}{'median s':>10}{'max s':>8}{'rss MB':>8}"
        f"{'alloc MB':>9}{'x input':>8}{'input':>9}"
    )
    ctx = multiprocessing.get_context("spawn")
    rows: list[dict[str, Any]] = []
    for name in names:
        q = ctx.Queue()
        p = ctx.Process(target=_child, args=(name, args.cases, args.seed, q))
        p.start()
        r = q.get()
        p.join()
        if "error" in r:
            print(f"{name:<18} harness error: {r['error']}")
            r.update(cases=0, ok=0, uncaught=1, max_s=0.0, peak_alloc_mb=0.0, worst_ratio=0.0)
            rows.append(r)
            continue
        rows.append(r)
        print(
            f"{name:<18}{r['cases']:>7}{r['ok']:>8}{r['uncaught']:>9}{r['median_s']:>10.4f}{r['max_s']:>8.3f}"
            f"{r['peak_rss_mb']:>8.1f}{r['peak_alloc_mb']:>9.1f}{r['worst_ratio']:>8.1f}{r['largest_input']:>9}",
            flush=True,
        )
        for ex in r.get("examples", []):
            print("    " + ex.replace("\n", "\n    "))
        if r.get("kinds"):
            print(f"    by type: {r['kinds']}")
    total = sum(r["cases"] for r in rows)
    uncaught = sum(r["uncaught"] for r in rows)
    slowest = max(rows, key=lambda r: r["max_s"])
    grew = max(rows, key=lambda r: r["worst_ratio"])
    fewest = min(r["cases"] for r in rows)
    print(
        f"figure={uncaught} uncaught exceptions (in {total} cases, {len(rows)} formats, >= {fewest} each; "
        f"slowest input {slowest['max_s']:.3f} s ({slowest['name']}); most memory per input byte "
        f"{grew['worst_ratio']:.1f}x ({grew['name']}))"
    )


if __name__ == "__main__":
    main()
