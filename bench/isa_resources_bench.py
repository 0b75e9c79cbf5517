"""Benchmark: resources of every kernel in a large real library, kernelpilot vs `cuobjdump -res-usage`.

Usage: python bench/isa_resources_bench.py [LIB] [--runs N]
LIB defaults to $KERNELPILOT_BENCH_LIB, else libcublasLt.so.* under /tmp/isa_whl (make it with
`pip download --no-deps nvidia-cublas -d /tmp/isa_whl`, then unzip 'nvidia/*/lib/*' from the wheel).
Both sides run as fresh processes (interpreter start included for kernelpilot). Also checks both report the
same (name, REG, STACK, SHARED) multiset. Last line: figure=<ratio> (median of N, spread ...).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD = (
    "import sys, json\n"
    "from kernelpilot.isa.api import IsaResourcesRequest\n"
    "from kernelpilot.isa.core import isa_resources\n"
    "r = isa_resources(IsaResourcesRequest(file=sys.argv[1], max_kernels=10**7))\n"
    "if len(sys.argv) > 2:\n"
    "    rows = [[k.name, k.registers, k.stack_frame_bytes, k.shared_section_bytes] for k in r.kernels]\n"
    "    json.dump(rows, sys.stdout)\n"
    "else:\n"
    "    print(r.kernel_count)\n"
)


def find_lib(arg: str | None) -> Path:
    cand = arg or os.environ.get("KERNELPILOT_BENCH_LIB")
    if not cand:
        hits = sorted(glob.glob("/tmp/isa_whl/nvidia/*/lib/libcublasLt.so.*"))
        cand = hits[0] if hits else None
    if not cand or not Path(cand).is_file():
        sys.exit(
            "no library: pass a path to e.g. libcublasLt.so.13 from the nvidia-cublas wheel (see docstring)"
        )
    return Path(cand)


def cuobjdump() -> str:
    sys.path.insert(0, str(REPO / "server"))
    from kernelpilot.toolchain import require_tool

    return str(require_tool("cuobjdump"))


def run_ours(lib: Path, rows: bool = False) -> tuple[float, list[list[object]]]:
    """One fresh process; timed runs print only the kernel count, the check run dumps every row."""
    import json

    extra = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "server"), *([extra] if extra else [])]))
    argv = [sys.executable, "-c", CHILD, str(lib)] + (["rows"] if rows else [])
    t = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, check=True, env=env)
    dt = time.perf_counter() - t
    return dt, json.loads(out.stdout) if rows else [[int(out.stdout)]]


def run_cuobjdump(exe: str, lib: Path) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run([exe, "-res-usage", str(lib)], capture_output=True, check=True, text=True)
    return time.perf_counter() - t, out.stdout


def parse_cuobjdump(text: str) -> collections.Counter[tuple[str, int, int, int]]:
    c: collections.Counter[tuple[str, int, int, int]] = collections.Counter()
    name = ""
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)", line)
        if m and name:
            c[(name, int(m.group(1)), int(m.group(2)), int(m.group(3)))] += 1
            name = ""
    return c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("lib", nargs="?")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    lib = find_lib(a.lib)
    exe = cuobjdump()
    ours_t, cuo_t = [], []
    ours_rows: list[list[object]] = []
    cuo_text = ""
    _, ours_rows = run_ours(lib, rows=True)  # untimed: the equality check
    for _ in range(a.runs):
        t, _count = run_ours(lib)
        ours_t.append(t)
        t2, cuo_text = run_cuobjdump(exe, lib)
        cuo_t.append(t2)
    ours_c = collections.Counter(
        (str(r[0]), int(r[1] or 0), int(r[2] or 0), int(r[3] or 0)) for r in ours_rows
    )
    cuo_c = parse_cuobjdump(cuo_text)
    same = ours_c == cuo_c
    mo, mc = statistics.median(ours_t), statistics.median(cuo_t)
    ratios = [o / c for o, c in zip(ours_t, cuo_t, strict=True)]
    spread = (max(ratios) - min(ratios)) / statistics.median(ratios) * 100
    print(f"library: {lib} ({lib.stat().st_size / 1e6:.0f} MB)")
    print(
        f"kernels: kernelpilot {sum(ours_c.values())}, cuobjdump {sum(cuo_c.values())}; "
        f"identical (name, REG, STACK, SHARED) multisets: {same}"
    )
    print(f"kernelpilot isa resources: median {mo:.2f} s over {a.runs} runs {[round(x, 2) for x in ours_t]}")
    print(f"cuobjdump -res-usage:      median {mc:.2f} s over {a.runs} runs {[round(x, 2) for x in cuo_t]}")
    print(
        f"figure={statistics.median(ratios):.3f} x cuobjdump time (median of {a.runs}, spread {spread:.1f}%)"
    )


if __name__ == "__main__":
    main()
