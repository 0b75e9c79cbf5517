"""Parse time of a 50-kernel ncu raw CSV (full set, ~2200 metrics per launch) into KernelProfiles.

Input: tests/fixtures/profile/ncu/launches50_full_raw.csv.gz, 50 launches of 8 kernels profiled with
`ncu --set full` in one capture on an H100 (see PROVENANCE.md). Last line: figure=... (median of N, spread).
"""

from __future__ import annotations

import gzip
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from kernelpilot.profile.core import parse_text  # noqa: E402

RUNS = 15


def main() -> None:
    path = ROOT / "tests/fixtures/profile/ncu/launches50_full_raw.csv.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    times: list[float] = []
    n = 0
    for _ in range(RUNS):
        t0 = time.perf_counter()
        _, kernels, _ = parse_text(text, "ncu_raw", path.name, include_raw=True)
        times.append((time.perf_counter() - t0) * 1e3)
        n = len(kernels)
    assert n == 50, n
    med = statistics.median(times)
    spread = (max(times) - min(times)) / med * 100
    header = next(ln for ln in text.splitlines() if ln.startswith('"ID"'))
    cols = header.count('","') + 1
    print(f"kernels={n} columns={cols} bytes={len(text)} runs={RUNS}")
    print(
        f"figure={med:.1f} ms (median of {RUNS}, spread {spread:.0f}% min {min(times):.1f} max "
        f"{max(times):.1f})"
    )


if __name__ == "__main__":
    main()
