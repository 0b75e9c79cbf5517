"""What the guard adds to an eval's wall time: on a ~50 us GPU kernel (issue 25: added checks <= 10 %), and
the isolated judge on a ~1 ms CPU op (issue 40: <= 15 %, process start-up paid once per eval).

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
cold timing (tests/guard/gpu_cases/add_kernel.py, contract_add.py). `--cpu` (issue 40): the isolated
judge (kernelpilot.judge) on a ~1 ms CPU op, the red-team corpus's torch GEMM at 512^3 fp32 (~0.75 ms a
call on this 2-core host: tests/guard/isolated/contracts/contract_gemm.py, cases/honest_gemm.py), warm
timing, against a `--time-spec` task on the same call; `judge_figure` is the judge's own work inside its
process (fresh input values, output checks, float64 references: `JudgeReport.phases_s`) as a share of the
eval's wall, and
`startup_figure` the runners' start-up (once per eval: interpreter, torch, the candidate's import).

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
CPU_N = 512
CPU_CONTRACT = {
    "module": "contract_gemm.py",
    "candidate": "honest_gemm.py:candidate",
    "shapes": [{"m": CPU_N, "n": CPU_N, "k": CPU_N}, {"m": 200, "n": 129, "k": 333}],
    "dtype": "fp32",
    "device": "cpu",
    "reduction": "k",
}
CPU_FACTORY = f"""import torch

from honest_gemm import candidate


def make():
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn({CPU_N}, {CPU_N}, generator=g), torch.randn({CPU_N}, {CPU_N}, generator=g)
    return lambda: candidate(a, b)
"""


def _sh(argv: list[str], cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelpilot", "--json", *args]


def _repo(scratch: Path, cpu: bool) -> dict[str, Path]:
    """The scratch repository, its two tasks and their baselines (setup: not in the figure)."""
    if scratch.exists():
        shutil.rmtree(scratch)
    if cpu:
        scratch.mkdir(parents=True)
        shutil.copy(ROOT / "tests" / "guard" / "isolated" / "contracts" / "contract_gemm.py", scratch)
        shutil.copy(ROOT / "tests" / "guard" / "isolated" / "cases" / "honest_gemm.py", scratch)
    else:
        shutil.copytree(ROOT / "tests" / "guard" / "gpu_cases", scratch)
    (scratch / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    (scratch / "contract.json").write_text(json.dumps(CPU_CONTRACT if cpu else GPU_CONTRACT))
    if cpu:
        (scratch / "kmake.py").write_text(CPU_FACTORY)
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-qm", "base"]):  # fmt: skip
        _sh(argv, scratch)
    kernel, spec = ("honest_gemm.py", "kmake.py:make") if cpu else ("add_kernel.py", "add_kernel.py:make")
    mode, runs = ("warm", "8") if cpu else ("cold", "2")
    common = ["--allowed-file", kernel, "--workdir", str(scratch), "--timing-mode", mode, "--runs", runs]
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


def _judge_s(rec: dict[str, Any]) -> tuple[float, float] | None:
    """(the judge's own work, the runners' start-up) in seconds, from an isolated judge's record."""
    phases = (rec.get("judge") or {}).get("phases_s") or {}
    if not phases:
        return None
    own = phases.get("fresh_values_s", 0.0) + phases.get("timed_checks_s", 0.0)
    return own, phases.get("runners_start_s", 0.0)


def _what(rec: dict[str, Any]) -> str:
    """Status, method, pairs, median; for a guarded record the harness's and the observation's seconds."""
    out = f"{rec.get('status')} ({rec.get('method')}, {rec.get('pairs')} pairs, "
    out += f"median {rec.get('candidate_median')})"
    checks = _checks_s(rec)
    if checks is not None:
        out += f", harness checks {checks:.2f} s in-process"
    judge = rec.get("judge") or {}
    if judge:
        out += f", judge phases {judge.get('phases_s')}, calls per batch {judge.get('calls_per_batch')}"
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
    judge: list[float] = []
    startup: list[float] = []
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
            own = _judge_s(rec) if name == "guarded" else None
            if own is not None:
                judge.append(own[0] / wall * 100)
                startup.append(own[1])
        g, u = walls["guarded"][-1], walls["unguarded"][-1]
        shares.append((g - u) / g * 100)
        if judge:
            print(
                f"  judge_figure={statistics.median(judge):.1f} % (its fresh values and output checks; "
                f"spread {min(judge):.1f}..{max(judge):.1f} %), startup_figure="
                f"{statistics.median(startup):.2f} s once per eval (runners started and set up)",
                flush=True,
            )
        _report(walls, shares, direct, args.cpu, fresh)  # after every repetition: a cut-off run still reports


def _report(
    walls: dict[str, list[float]], shares: list[float], direct: list[float], cpu: bool, fresh: list[float]
) -> None:
    for name, xs in walls.items():
        print(f"  {name:9s} eval {_spread(xs, 's')}")
    kernel = (
        f"the isolated judge on a ~1 ms CPU op (torch GEMM {CPU_N}^3 fp32, warm, 8 pairs)"
        if cpu
        else f"~50 us fp32 add of {N} elements"
    )
    print(
        f"figure={statistics.median(shares):.1f} % of a guarded eval's wall time is the guard's (median of "
        f"{len(shares)} interleaved repetitions, spread {min(shares):.1f}..{max(shares):.1f} %; paired "
        f"eval of an unchanged tree, {kernel})",
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
