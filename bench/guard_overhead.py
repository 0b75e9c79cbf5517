"""What the guard adds to an eval's wall time on a ~50 us kernel (issue: added checks <= 10 %).

Needs an NVIDIA GPU with torch. An eval's wall time is the sum of the processes it runs (plus git and
environment bookkeeping common to both kinds of task, left out here, which makes the share an upper
bound). So this bench times, interleaved, REPS times each, the processes the two kinds of eval run for the
same fused elementwise kernel (x + 2y, fp32, 12.6 M elements, ~50 us on an H100, cold timing):
  plain    one timing process of a `--time-spec` task (unguarded): `kernelpilot time SPEC`
  watched  one timing process of a contract task: Watch + timed outputs (`--no-observe-trace`)
  traced   the same with the activity trace and the synchronized re-timing (one per eval)
  harness  the guard harness process (every semantic check, 3 shapes; it counts as the first warm-up run)
and composes an eval of RUNS measured runs after WARMUP warm-up runs (the task defaults: 10 and 1):
  unguarded = (WARMUP + RUNS) x plain
  guarded   = harness + WARMUP x watched + traced + (RUNS - 1) x watched
The figure is (guarded - unguarded) / guarded per repetition as eval runs it, the harness standing in for
the first warm-up run; the gross cost of the checks (the harness counted on top of an unchanged eval) is
printed above it. Median and range over REPS.

Usage: python bench/guard_overhead.py [--reps 3] [--runs 10] [--warmup 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "guard" / "gpu_cases"
SCRATCH = Path("/tmp/guard-overhead")
N = 12_582_912


def _repo() -> None:
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    shutil.copytree(CASES, SCRATCH)
    (SCRATCH / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    contract = {
        "module": "contract_add.py",
        "candidate": "add_kernel.py:add",
        "shapes": [{"n": N}, {"n": 1_000_003}, {"n": 4097}],
        "dtype": "fp32",
        "roofline": {"op": "elementwise", "params": {"numel": "n", "inputs": 2, "outputs": 1}},
    }
    (SCRATCH / "contract.json").write_text(json.dumps(contract))
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.email=b@x", "-c", "user.name=b", "commit", "-qm", "base"],
    ):
        subprocess.run(argv, cwd=SCRATCH, check=True, capture_output=True)


def _tasks() -> dict[str, Path]:
    from kernelpilot.tasks.create import create_task
    from kernelpilot.tasks.models import CreateTaskRequest

    common = {"allowed_file": ["add_kernel.py"], "workdir": str(SCRATCH), "timing_mode": "cold"}
    g = create_task(CreateTaskRequest(name="guarded", contract="contract.json", **common))  # type: ignore[arg-type]
    u = create_task(CreateTaskRequest(name="unguarded", time_spec="add_kernel.py:make", **common))  # type: ignore[arg-type]
    return {"guarded": SCRATCH / g.task_dir, "unguarded": SCRATCH / u.task_dir}


def _process(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of one timing process, and what it reported (its median, or why it failed)."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=SCRATCH, env=env, capture_output=True, text=True, timeout=120, check=False)
    wall = time.perf_counter() - t0
    try:
        doc = json.loads(p.stdout)
        obs = doc.get("observation") or {}
        what = f"median {doc['stats']['median']:.2f} us" + (
            f", observe {obs['seconds']:.2f} s in-process" if obs.get("observed") else ""
        )
    except (json.JSONDecodeError, KeyError, TypeError):
        what = "FAILED: " + (p.stderr or p.stdout)[-400:]
    return wall, what


def _harness(task_dir: Path, env: dict[str, str]) -> tuple[float, str]:
    from kernelpilot.guard.steps import run_harness
    from kernelpilot.tasks.evaluate import load_task

    task, _, workdir = load_task(str(task_dir))
    assert task.contract is not None
    t0 = time.perf_counter()
    got = run_harness(task.contract, workdir, env, 300)
    wall = time.perf_counter() - t0
    if got.report is None:
        return wall, "FAILED: " + got.failure[-400:]
    return wall, got.report.summary()


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    from kernelpilot.guard.timed import TASK_ENV
    from kernelpilot.tasks.create import command_env, interpreter_argv
    from kernelpilot.tasks.evaluate import load_task

    _repo()
    tasks = _tasks()
    g_task, _, _ = load_task(str(tasks["guarded"]))
    u_task, _, _ = load_task(str(tasks["unguarded"]))
    g_env = {**command_env(g_task.environment), TASK_ENV: str(tasks["guarded"] / "task.json")}
    u_env = command_env(u_task.environment)
    walls: dict[str, list[float]] = {"plain": [], "watched": [], "traced": [], "harness": []}
    for i in range(args.reps):
        steps = {
            "plain": lambda: _process(interpreter_argv(u_task.eval_command), u_env),
            "watched": lambda: _process(
                [*interpreter_argv(g_task.eval_command), "--no-observe-trace"], g_env
            ),
            "traced": lambda: _process(interpreter_argv(g_task.eval_command), g_env),
            "harness": lambda: _harness(tasks["guarded"], g_env),
        }
        order = list(steps) if i % 2 == 0 else list(reversed(steps))
        for name in order:
            wall, what = steps[name]()
            walls[name].append(wall)
            print(f"rep {i + 1} {name:8s} {wall:6.2f} s  {what}", flush=True)
        _report(walls, args.runs, args.warmup)  # after every repetition: a cut-off run still reports


def _report(walls: dict[str, list[float]], runs: int, warmup: int) -> None:
    """Two shares per repetition: `checks` counts the harness as a process added on top of an unchanged
    eval (the conservative figure); `net` is what eval runs now, the harness standing in for the first
    warm-up run (tasks.evaluate.HARNESS_WARMUP_RUNS)."""
    reps = len(walls["harness"])
    for name, xs in walls.items():
        print(f"  {name:8s} {_spread(xs)}")
    checks, net, gs, us = [], [], [], []
    for i in range(reps):
        plain, watched, traced, harness = (walls[k][i] for k in ("plain", "watched", "traced", "harness"))
        unguarded = (warmup + runs) * plain
        full = harness + warmup * watched + traced + (runs - 1) * watched
        now = full - min(warmup, 1) * watched
        gs.append(now)
        us.append(unguarded)
        checks.append((full - unguarded) / full * 100)
        net.append((now - unguarded) / now * 100)
    print(f"  eval of {runs} runs + {warmup} warm-up: guarded {_spread(gs)}, unguarded {_spread(us)}")
    print(
        f"  gross cost of the checks (harness process + watching + one trace, counted on top of an unchanged "
        f"eval): {statistics.median(checks):.1f} % of a guarded eval (spread {min(checks):.1f}.."
        f"{max(checks):.1f} %)"
    )
    print(
        f"figure={statistics.median(net):.1f} % longer eval wall time with the guard, as eval runs it (the "
        f"harness process stands in for the first warm-up run; median of {reps} interleaved repetitions, "
        f"spread {min(net):.1f}..{max(net):.1f} %; {runs} runs + {warmup} warm-up, cold timing, ~50 us fp32 "
        f"add of {N} elements)",
        flush=True,
    )


if __name__ == "__main__":
    main()
