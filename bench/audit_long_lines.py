"""Benchmark: the citation pattern of `kernelpilot audit` on 1 MB lines of hostile shapes (issue 41).

Each line (an identifier run, metric-colon runs, open quotes, a long number, unit or path, many arrows) goes
through `kernelpilot.wiki.audit.find_citations` `--runs` times; the unanchored pattern the audit had is timed
on a 60,000-character identifier run for comparison (it took 13 s: quadratic).
Usage: python bench/audit_long_lines.py [--runs N]
Last line: figure=<slowest 1 MB line, median seconds> s (median of N, spread ...).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from kernelpilot.wiki.audit import find_citations

LINES = {
    "identifier run": "a" * 1_000_000,
    "metric-colon runs": "a: " * 333_333,
    "open quotes": 'a: "' * 250_000,
    "digits then letters": "9a" * 500_000,
    "long number": "a: " + "1" * 1_000_000,
    "long unit": "a: 1 " + "B" * 1_000_000,
    "long path": "a: 1 B <- " + "p" * 1_000_000,
    "many arrows": "a: 1 B <- p " * 90_000,
    "quoted text runs": 'a: "x" ' * 150_000,
}
OLD = re.compile(
    r"(?P<metric>[a-z][a-z0-9_]*): "
    r'(?P<value>"[^"\n]*"|[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?) '
    r"(?P<unit>[A-Za-z/]+) <- (?P<path>[^\s:`\"'<>|()\[\]]+):L(?P<line>\d+)"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    medians: dict[str, float] = {}
    spreads: dict[str, float] = {}
    for name, line in LINES.items():
        text = line + " <- \n"
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            find_citations(text, "f.md", False)
            times.append(time.perf_counter() - t0)
        medians[name] = statistics.median(times)
        spreads[name] = (max(times) - min(times)) / medians[name] * 100
        print(f"{name:<20} {len(line):>9,} chars  {medians[name] * 1e3:8.1f} ms", flush=True)
    t0 = time.perf_counter()
    list(OLD.finditer("a" * 60_000 + " <- "))
    print(f"the unanchored pattern before, 60,000-character identifier run: {time.perf_counter() - t0:.1f} s")
    worst = max(medians, key=lambda k: medians[k])
    print(
        f"figure={medians[worst]:.3f} s for the slowest 1 MB line ({worst}; median of {args.runs}, "
        f"spread {spreads[worst]:.0f}%)"
    )


if __name__ == "__main__":
    main()
