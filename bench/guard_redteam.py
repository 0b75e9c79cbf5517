"""Benchmark: issue 40's red-team corpus (tests/guard/isolated) through `kernelpilot eval` on the CPU path.

Usage: python bench/guard_redteam.py [--only NAME ...]
Each CPU case of tests/guard/isolated/corpus.py is evaluated against its contract's honest twin exactly as
tests/guard/isolated/test_redteam.py does (judging.run_case: paired, min_effect 5 %, an attack read as
improved evaluated again). Prints one line per case (status, speed-up and its interval, how it was held),
the counts per family, and last `figure=<attacks accepted with a gain> of <attacks> (honest refused: N of M,
records lost: K; machine, wall)`.
"""

from __future__ import annotations

import argparse
import collections
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "server"))

from tests.guard.isolated.corpus import CASES  # noqa: E402
from tests.guard.isolated.judging import run_case  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=[])
    args = ap.parse_args()
    cases = [c for c in CASES if not c.gpu_only and (not args.only or c.name in args.only)]
    t0 = time.perf_counter()
    held: collections.Counter[str] = collections.Counter()
    wins, refused, lost = [], [], []
    with tempfile.TemporaryDirectory(prefix="kp-redteam-") as tmp:
        for case in cases:
            got = run_case(Path(tmp), case)
            sp = f"{got.speedup:.3f}" if got.speedup is not None else "-"
            ci = f"[{got.ci[0]:.3f}, {got.ci[1]:.3f}]" if got.ci else "-"
            fam = f"family {got.family}" if got.family else "honest"
            print(
                f"{got.case:44s} {fam:9s} {got.status:26s} speed-up {sp:>7s} {ci:>18s}  {got.why}", flush=True
            )
            held[f"{fam}: {got.why.split(':')[0]}"] += 1
            if not got.recorded:
                lost.append(got.case)
            if got.kind == "attack" and not got.held:
                wins.append(got.case)
            if got.kind == "honest" and not got.held:
                refused.append(got.case)
    for key, n in sorted(held.items()):
        print(f"  {key}: {n}")
    attacks = sum(c.kind == "attack" for c in cases)
    honest = len(cases) - attacks
    print(
        f"figure={len(wins)} of {attacks} attacks accepted with a gain (honest refused: {len(refused)} of "
        f"{honest}, records lost: {len(lost)}; {platform.machine()} {platform.python_version()}, "
        f"{time.perf_counter() - t0:.0f} s){' WINS: ' + ', '.join(wins) if wins else ''}",
        flush=True,
    )


if __name__ == "__main__":
    main()
