"""Benchmark: peak memory and time of reading a large ncu raw CSV (`profile parse`, `workload read`).

Input: a raw page of N launches (default 20,000: ~375 MB, the size issue 41 measured) made from the real
recorded tests/fixtures/profile/ncu/launches50_full_raw.csv.gz (50 launches of 8 kernels, `ncu --set full`
on an H100, ~2,230 metrics per launch; tests/fixtures/profile/PROVENANCE.md): its banner, header and units
rows, then its 50 launch rows repeated with the ID column renumbered.
Each command runs as `python -m kernelpilot ...` in a child of its own (PYTHONPATH=--server, default this
checkout's server/), `--runs` times; the peak resident set of each child is read from `os.wait4`.
Usage: python bench/ncu_csv_memory.py [--launches N] [--runs R] [--server PATH]
Last line: figure=<median peak RSS of profile parse> MB (median of R, spread ...), workload read's after.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "tests" / "fixtures" / "profile" / "ncu" / "launches50_full_raw.csv.gz"


def make_csv(path: Path, launches: int) -> int:
    """Write the N-launch raw page; returns its size in bytes."""
    lines = gzip.decompress(SEED.read_bytes()).decode().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    head = lines[: first + 2]  # banner, header, units row
    rows = [ln for ln in lines[first + 2 :] if ln.startswith('"')]
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(head)
        for n in range(launches):
            row = rows[n % len(rows)]
            fh.write(f'"{n}"' + row[row.index(",") :])
    return path.stat().st_size


def run(argv: list[str], server: Path) -> tuple[float, float, int]:
    """(peak RSS MB, seconds, exit code) of `python -m kernelpilot <argv>` in a child of its own."""
    env = {**os.environ, "PYTHONPATH": str(server)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelpilot", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        print(f"  {' '.join(argv[:2])}: exit {proc.returncode}: {err[-300:]}", flush=True)
    return usage.ru_maxrss / 1024, secs, proc.returncode


def _spread(xs: list[float]) -> str:
    med = statistics.median(xs)
    return f"median of {len(xs)}, spread {(max(xs) - min(xs)) / med * 100:.0f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--launches", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server", type=Path, default=REPO / "server", help="the kernelpilot package to measure")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kp-ncu-big-") as tmp:
        csv = Path(tmp) / "big_raw.csv"
        size = make_csv(csv, args.launches)
        print(
            f"{csv.name}: {args.launches:,} launches, {size / 2**20:.0f} MiB; server {args.server}",
            flush=True,
        )
        commands = {
            "profile parse": ["--json", "profile", "parse", str(csv), "--kind", "ncu_raw"],
            "workload read": ["workload", "read", str(csv), "--out", str(Path(tmp) / "r.json")],
        }
        peaks: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                rss, secs, code = run(argv, args.server)
                peaks[name].append(rss)
                print(f"  {name}: peak RSS {rss:,.0f} MB, {secs:.1f} s, exit {code}", flush=True)
    pp, wr = peaks["profile parse"], peaks["workload read"]
    print(
        f"figure={statistics.median(pp):,.0f} MB peak RSS, profile parse of {args.launches:,} launches "
        f"({_spread(pp)}); workload read {statistics.median(wr):,.0f} MB ({_spread(wr)})"
    )


if __name__ == "__main__":
    main()
