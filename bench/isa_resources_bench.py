"""Benchmark: resources of every kernel in a large real library, kernelpilot vs `cuobjdump -res-usage`.

Usage: python bench/isa_resources_bench.py [LIB] [--runs N]
LIB defaults to $KERNELPILOT_BENCH_LIB, else libcublasLt.so.* under /tmp/isa_whl (make it with
`pip download --no-deps nvidia-cublas -d /tmp/isa_whl`, then unzip 'nvidia/*/lib/*' from the wheel).
Each run times, as fresh processes on the same file, in turn: the CLI `kernelpilot isa resources LIB`
(all kernels, its text table written to a pipe, as cuobjdump's text is: the figure), the library call
`isa_resources()` from a small script (interpreter start and teardown included), and `cuobjdump -res-usage`.
An untimed run of the CLI with --json checks both report the same (name, REG, STACK, SHARED) multiset.
Last line: figure=<CLI / cuobjdump time> (median of the N per-run ratios, their spread).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD = (
    "import sys\n"
    "from kernelpilot.isa.api import IsaResourcesRequest\n"
    "from kernelpilot.isa.core import isa_resources\n"
    "r = isa_resources(IsaResourcesRequest(file=sys.argv[1], max_kernels=10**9))\n"
    "print(r.kernel_count)\n"
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
    from kernelpilot.host.toolchain import require_tool

    return str(require_tool("cuobjdump"))


def _env() -> dict[str, str]:
    extra = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "server"), *([extra] if extra else [])]))


def run_cli(lib: Path, as_json: bool = False) -> tuple[float, bytes]:
    """`kernelpilot isa resources LIB` in a fresh process, stdout captured through a pipe."""
    argv = [
        sys.executable,
        "-m",
        "kernelpilot",
        "isa",
        "resources",
        str(lib),
        "--max-kernels",
        "1000000000",
    ]
    t = time.perf_counter()
    out = subprocess.run(argv + (["--json"] if as_json else []), capture_output=True, check=True, env=_env())
    return time.perf_counter() - t, out.stdout


def run_library(lib: Path) -> tuple[float, int]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(lib)], capture_output=True, check=True, env=_env())
    return time.perf_counter() - t, int(out.stdout)


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{platform.node() or 'host'}: {os.cpu_count()} cores {model}, Python {platform.python_version()}"


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
    import json

    cli_t, lib_t, cuo_t = [], [], []
    cuo_text = ""
    _, js = run_cli(lib, as_json=True)  # untimed: the equality check
    ours_rows = [
        (k["name"], k["registers"], k["stack_frame_bytes"], k["shared_section_bytes"])
        for k in json.loads(js)["kernels"]
    ]
    counts: set[int] = set()
    for _ in range(a.runs):
        t, text = run_cli(lib)
        cli_t.append(t)
        counts.add(int(text.split(b": ", 1)[1].split(b" ", 1)[0]))
        t, n = run_library(lib)
        lib_t.append(t)
        counts.add(n)
        t, cuo_text = run_cuobjdump(exe, lib)
        cuo_t.append(t)
    ours_c = collections.Counter(
        (str(r[0]), int(r[1] or 0), int(r[2] or 0), int(r[3] or 0)) for r in ours_rows
    )
    cuo_c = parse_cuobjdump(cuo_text)
    same = ours_c == cuo_c and counts == {sum(ours_c.values())}
    mc = statistics.median(cuo_t)
    ratios = [o / c for o, c in zip(cli_t, cuo_t, strict=True)]
    spread = (max(ratios) - min(ratios)) / statistics.median(ratios) * 100
    print(f"machine: {machine()}")
    print(f"library: {lib} ({lib.stat().st_size / 1e6:.0f} MB)")
    print(
        f"kernels: kernelpilot {sum(ours_c.values())}, cuobjdump {sum(cuo_c.values())}; "
        f"identical (name, REG, STACK, SHARED) multisets and counts in every run: {same}"
    )
    for what, ts in (("kernelpilot isa resources (CLI)", cli_t), ("isa_resources() (library)", lib_t)):
        ratio = statistics.median([o / c for o, c in zip(ts, cuo_t, strict=True)])
        print(
            f"{what:<32} median {statistics.median(ts):.2f} s = {ratio:.3f} x, over {a.runs} runs "
            f"{[round(x, 2) for x in ts]}"
        )
    print(f"{'cuobjdump -res-usage':<32} median {mc:.2f} s over {a.runs} runs {[round(x, 2) for x in cuo_t]}")
    fig = statistics.median(ratios)
    print(f"figure={fig:.3f} x cuobjdump time (CLI, median of {a.runs}, spread {spread:.1f}%)")


if __name__ == "__main__":
    main()
