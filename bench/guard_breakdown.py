"""Where a guarded eval's wall time goes (issue 25: the guard's cost on a ~50 us kernel).

The scratch repository and tasks of `bench/guard_overhead.py` (same kernel, same contract); each repetition
runs one `kernelpilot eval` of the guarded task and one of the unguarded task, each as a process, under a
wrapper that times every subprocess eval starts (`kernelpilot.host.toolchain.run`: git, the guard harness,
the `kernelpilot compare` process, nvidia-smi) and the eval process's own import of the CLI. From each
record and outputs it takes the in-process seconds the processes report: the harness checks
(`correctness`, "; X s"; on a GPU they include creating the CUDA context, which the timing then reuses),
the comparison (the compare result's `wall_s`: loading both sides, the timed pairs, the observation) and
the candidate side's observation (`observation.seconds`). Beside them, bare process start-ups, timed alone:
`python -c pass`, the harness's imports, the CLI's imports (and on a GPU: torch's import and the CUDA
context).

Prints one line per step (median over REPS, min..max), then the guard's share as `guard_overhead.py` does.

Usage: python bench/guard_breakdown.py [--reps 5] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import guard_overhead  # the scratch repository and its two tasks

# Runs `kernelpilot --json eval TASK` in-process with every subprocess timed; writes the log as JSON.
WRAPPER = r"""
import json, os, sys, time
t0 = time.perf_counter()
from kernelpilot.host import toolchain
log = []
_run = toolchain.run
def _label(argv):
    a = [str(x) for x in argv]
    name = os.path.basename(a[0])
    if "kernelpilot.guard.harness" in a:
        return "harness process"
    if "kernelpilot.guard.checked" in a:
        return "checks + compare process (guard.checked)"
    if "compare" in a or "kernelpilot.timing.compare_process" in a:
        return "compare process"
    if name == "git":
        return "git " + (a[1] if len(a) > 1 else "")
    return name
def _inside(res):
    try:
        return float(json.loads(res.stdout)["wall_s"])
    except (ValueError, KeyError, TypeError):
        return None
def run(argv, **kw):
    s = time.perf_counter()
    res = None
    try:
        res = _run(argv, **kw)
        return res
    finally:
        log.append([_label(argv), time.perf_counter() - s, _inside(res) if res is not None else None])
toolchain.run = run
from kernelpilot.adapters.cli import main
t1 = time.perf_counter()
code = main(["--json", "eval", sys.argv[2]])
t2 = time.perf_counter()
with open(sys.argv[1], "w") as fh:
    json.dump({"import_s": t1 - t0, "main_s": t2 - t1, "subprocesses": log, "code": code}, fh)
"""


def _median_runs(argv: list[str], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        out.append(time.perf_counter() - t0)
    return out


def _starts(cpu: bool, n: int) -> dict[str, list[float]]:
    py = sys.executable
    got = {
        "python -c pass": _median_runs([py, "-c", "pass"], n),
        "python: import the harness's modules": _median_runs(
            [py, "-c", "import numpy, kernelpilot.guard.harness, kernelpilot.guard.observe"], n
        ),
        "python: import the CLI": _median_runs([py, "-c", "import kernelpilot.adapters.cli"], n),
    }
    if not cpu:
        got["python: import torch"] = _median_runs([py, "-c", "import torch"], n)
        got["python: import torch + CUDA context"] = _median_runs(
            [py, "-c", "import torch; torch.empty(1, device='cuda'); torch.cuda.synchronize()"], n
        )
    return got


def _one(task: Path, scratch: Path) -> dict[str, float]:
    """The steps of one eval process, in seconds."""
    log = scratch.parent / f"{scratch.name}-log.json"  # outside the repository: not a changed file
    wrapper = scratch.parent / f"{scratch.name}-wrapper.py"
    wrapper.write_text(WRAPPER)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, str(wrapper), str(log), str(task)], cwd=scratch, capture_output=True,
                       text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - t0
    doc = json.loads(log.read_text())
    rec: dict[str, Any] = json.loads(p.stdout)["record"]
    steps: dict[str, float] = defaultdict(float)
    steps["eval process, wall"] = wall
    steps["eval process: python start-up"] = wall - doc["import_s"] - doc["main_s"]
    steps["eval process: import the CLI"] = doc["import_s"]
    for label, secs, inside in doc["subprocesses"]:
        steps[f"subprocess: {label}"] += secs
        if inside is not None:  # a compare result's wall_s: from loading the sides to the result
            steps["  in-process: the comparison (load, time, observe)"] += inside
    steps["eval process: in-process work (rest)"] = doc["main_s"] - sum(s for _, s, _ in doc["subprocesses"])
    harness = re.search(r"; ([0-9.]+) s$", rec.get("correctness") or "")
    if harness:
        steps["  in-process: harness checks"] = float(harness.group(1))
    obs = rec.get("observation") or {}
    if obs.get("seconds") is not None:
        steps["  in-process: observation of the candidate side"] = float(obs["seconds"])
    steps["status"] = 0.0 if rec.get("status") in ("improved", "regressed", "neutral") else 1.0
    return steps


def _line(name: str, xs: list[float], runs: int = 0) -> str:
    """Median (min..max); a step only some runs took (the baseline tree's first checkout) says how many."""
    some = f"  in {len(xs)} of {runs} runs" if 0 < len(xs) < runs else ""
    return f"  {name:52s} {statistics.median(xs):7.3f} s  ({min(xs):.3f}..{max(xs):.3f}){some}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="numpy axpy on the host timer (no GPU: a dry run)")
    args = ap.parse_args()
    scratch = Path("/tmp/guard-breakdown-cpu" if args.cpu else "/tmp/guard-breakdown")
    tasks = guard_overhead._repo(scratch, args.cpu)
    print(f"process start-ups alone ({args.reps} runs each):")
    for name, xs in _starts(args.cpu, args.reps).items():
        print(_line(name, xs))
    per: dict[str, dict[str, list[float]]] = {"guarded": defaultdict(list), "unguarded": defaultdict(list)}
    for i in range(args.reps):
        order = ["guarded", "unguarded"] if i % 2 == 0 else ["unguarded", "guarded"]
        for name in order:
            for k, v in _one(tasks[name], scratch).items():
                per[name][k].append(v)
    shares = [
        (g - u) / g * 100
        for g, u in zip(
            per["guarded"]["eval process, wall"], per["unguarded"]["eval process, wall"], strict=True
        )
    ]
    for name, steps in per.items():
        bad = sum(steps.pop("status"))
        print(f"{name} eval ({args.reps} runs, {int(bad)} without a verdict):")
        for k, xs in steps.items():
            print(_line(k, xs, args.reps))
    print(
        f"figure={statistics.median(shares):.1f} % of a guarded eval's wall time is the guard's (median of "
        f"{len(shares)} interleaved repetitions under the breakdown wrapper, spread "
        f"{min(shares):.1f}..{max(shares):.1f} %; {'CPU DRY RUN' if args.cpu else 'GPU'})"
    )


if __name__ == "__main__":
    main()
