"""What the guard adds to an eval's wall time on a ~50 us kernel (issue 25: added checks <= 10 %).

Two tasks on the same kernel in one scratch repository, each evaluated with `kernelpilot eval` (a process,
as an agent runs it) on an unchanged tree, paired against its baseline commit (`tasks.paired`):
  guarded    a contract task (`--contract`): one `guard.checked` process, the semantic checks and then
             the paired timing with observation (Watch, timed outputs, the synchronized re-timing and,
             when that cannot settle it, the activity trace), the candidate side judged by eval
  unguarded  a `--time-spec` task: one compare process (`timing.compare_process`)
interleaved (guarded first on odd repetitions, second on even ones), REPS times each. The figure is
(guarded - unguarded) / guarded per repetition, median and range over REPS; the lines above it give the
walls and, from each guarded record, the harness's and the observation's own seconds.

`fresh_figure` (issue 31): the share of the guarded eval's wall time that its work under the timer
adds, from the candidate's `Observation.fresh_cost`: every sampled timed call's fresh values and output
sample (their device time, measured in the timing process after the timing, times the sampled calls),
plus the float64 references of the checked calls; doubled, since the baseline side does the same. The
thread attribution costs nothing here (no thread is started: no forced trace).

GPU (default; needs an NVIDIA GPU with torch): out = x + 2y, fp32, 12.6 M elements (~50 us on an H100),
cold timing (tests/guard/gpu_cases/add_kernel.py, contract_add.py). `--cpu`: the numpy axpy of
tests/guard/cases on the host timer, to check the bench itself where there is no GPU (not the figure the
issue asks for).

Usage: python bench/guard_overhead.py [--reps 5] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
N = 12_582_912
GPU_CONTRACT = {
    "module": "contract_add.py",
    "candidate": "add_kernel.py:add",
    "shapes": [{"n": N}, {"n": 1_000_003}, {"n": 4097}],
    "dtype": "fp32",
    "roofline": {"op": "elementwise", "params": {"numel": "n", "inputs": 2, "outputs": 1}},
}
CPU_CONTRACT = {
    "module": "contract_axpy.py",
    "candidate": "honest_axpy.py:axpy",
    "shapes": [{"n": 4096}, {"n": 1000}, {"n": 4099}],
    "dtype": "fp32",
}
CPU_FACTORY = """import numpy as np

from honest_axpy import axpy


def make():
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
    return lambda: axpy(x, y)
"""


def _sh(argv: list[str], cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelpilot", "--json", *args]


def _repo(scratch: Path, cpu: bool) -> dict[str, Path]:
    """The scratch repository, its two tasks and their baselines (setup: not in the figure)."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(ROOT / "tests" / "guard" / ("cases" if cpu else "gpu_cases"), scratch)
    (scratch / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    (scratch / "contract.json").write_text(json.dumps(CPU_CONTRACT if cpu else GPU_CONTRACT))
    if cpu:
        (scratch / "kmake.py").write_text(CPU_FACTORY)
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-qm", "base"]):  # fmt: skip
        _sh(argv, scratch)
    kernel, spec = ("honest_axpy.py", "kmake.py:make") if cpu else ("add_kernel.py", "add_kernel.py:make")
    common = ["--allowed-file", kernel, "--workdir", str(scratch), "--timing-mode", "cold", "--runs", "2"]
    tasks = {}
    for name, how in (("guarded", ["--contract", "contract.json"]), ("unguarded", ["--time-spec", spec])):
        p = _sh(_cli("task", "create", "--name", name, *how, *common), scratch)
        if p.returncode != 0:
            raise SystemExit(f"task create {name} failed: {p.stderr[-1500:]}")
        tasks[name] = scratch / json.loads(p.stdout)["task_dir"]
        p = _sh(_cli("eval", str(tasks[name]), "--refresh-baseline"), scratch)
        if p.returncode != 0:
            raise SystemExit(f"baseline of {name} failed: {p.stderr[-1500:]}")
    return tasks


def _eval(task: Path, scratch: Path) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one `kernelpilot eval` process and its record."""
    t0 = time.perf_counter()
    p = _sh(_cli("eval", str(task)), scratch)
    wall = time.perf_counter() - t0
    try:
        rec: dict[str, Any] = json.loads(p.stdout)["record"]
    except (json.JSONDecodeError, KeyError, TypeError):
        rec = {"status": "ERROR", "output_tail": (p.stderr or p.stdout)[-600:]}
    return wall, rec


def _checks_s(rec: dict[str, Any]) -> float | None:
    """Seconds the guard's checks took inside the checks-and-timing process (its correctness line ends so)."""
    harness = re.search(r"; ([0-9.]+) s$", rec.get("correctness") or "")
    return float(harness.group(1)) if harness else None


def _fresh_s(rec: dict[str, Any]) -> float | None:
    """Seconds the fresh values, the per-call samples and the checked calls' references added to the eval
    (both sides: the candidate's `fresh_cost`, doubled)."""
    cost = (rec.get("observation") or {}).get("fresh_cost") or {}
    if not cost:
        return None
    per_side = cost["sampled_calls"] * cost["fresh_us_per_call"] / 1e6 + cost["checks_s"]
    return 2 * per_side


def _what(rec: dict[str, Any]) -> str:
    """Status, method, pairs, median; for a guarded record the harness's and the observation's seconds."""
    out = f"{rec.get('status')} ({rec.get('method')}, {rec.get('pairs')} pairs, "
    out += f"median {rec.get('candidate_median')})"
    checks = _checks_s(rec)
    if checks is not None:
        out += f", harness checks {checks:.2f} s in-process"
    obs = rec.get("observation") or {}
    if obs.get("observed"):
        out += f", observation {obs.get('seconds', 0.0):.2f} s in-process"
    cost = obs.get("fresh_cost") or {}
    if cost:
        out += (
            f", fresh values + samples {cost['fresh_us_per_call']:.1f} us x {cost['sampled_calls']:.0f} "
            f"calls, references {cost['checks_s']:.3f} s"
        )
    if rec.get("status") == "ERROR" or rec.get("rejection"):
        out += f"; {str(rec.get('output_tail'))[-400:]}"
    return out


def _spread(xs: list[float], unit: str) -> str:
    return f"{statistics.median(xs):.2f} {unit} (min {min(xs):.2f}, max {max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="numpy axpy on the host timer (no GPU: a dry run)")
    args = ap.parse_args()
    scratch = Path("/tmp/guard-overhead-cpu" if args.cpu else "/tmp/guard-overhead")
    tasks = _repo(scratch, args.cpu)
    walls: dict[str, list[float]] = {"guarded": [], "unguarded": []}
    shares: list[float] = []
    direct: list[float] = []
    fresh: list[float] = []
    for i in range(args.reps):
        order = ["guarded", "unguarded"] if i % 2 == 0 else ["unguarded", "guarded"]
        for name in order:
            wall, rec = _eval(tasks[name], scratch)
            walls[name].append(wall)
            print(f"rep {i + 1} {name:9s} {wall:6.2f} s  {_what(rec)}", flush=True)
            checks = _checks_s(rec) if name == "guarded" else None
            if checks is not None:
                direct.append(checks / wall * 100)
            added = _fresh_s(rec) if name == "guarded" else None
            if added is not None:
                fresh.append(added / wall * 100)
        g, u = walls["guarded"][-1], walls["unguarded"][-1]
        shares.append((g - u) / g * 100)
        _report(walls, shares, direct, args.cpu, fresh)  # after every repetition: a cut-off run still reports


def _report(
    walls: dict[str, list[float]], shares: list[float], direct: list[float], cpu: bool, fresh: list[float]
) -> None:
    for name, xs in walls.items():
        print(f"  {name:9s} eval {_spread(xs, 's')}")
    kernel = (
        "numpy axpy of 4096 fp32 on the host timer (CPU DRY RUN)"
        if cpu
        else f"~50 us fp32 add of {N} elements"
    )
    print(
        f"figure={statistics.median(shares):.1f} % of a guarded eval's wall time is the guard's (median of "
        f"{len(shares)} interleaved repetitions, spread {min(shares):.1f}..{max(shares):.1f} %; paired "
        f"eval of an unchanged tree, cold timing, {kernel})",
        flush=True,
    )
    if direct:
        # the same cost measured inside the process: free of the ~0.5 s spread of torch's import that the
        # difference of two process walls carries
        print(
            f"checks_figure={statistics.median(direct):.1f} % of a guarded eval's wall time is the guard's "
            f"checks, timed inside its process (median of {len(direct)}, spread "
            f"{min(direct):.1f}..{max(direct):.1f} %)",
            flush=True,
        )
    if fresh:
        print(
            f"fresh_figure={statistics.median(fresh):.1f} % of a guarded eval's wall time is issue 31's work "
            f"under the timer (fresh input values and the output sample of every timed call, the checked "
            f"calls' references; both sides; median of {len(fresh)}, spread "
            f"{min(fresh):.1f}..{max(fresh):.1f} %)",
            flush=True,
        )


if __name__ == "__main__":
    main()
