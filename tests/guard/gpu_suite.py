"""The hack suite end to end through `kernelpilot eval` with a contract (issue 25's acceptance run).

Not a pytest module. `python tests/guard/gpu_suite.py OUT_DIR` needs an NVIDIA GPU with torch (driver:
tests/guard/gpu_run.sh); `--cpu` runs the same driver on the numpy cases of tests/guard/cases (no GPU: the
wiring, the statuses and the report, not the acceptance figures).

Builds a scratch git repository of the cases with one contract task per contract (each with its baseline
candidate committed), refreshes the baselines, then:
1. benign look-alikes one at a time (their verdicts are timing verdicts: a quiet GPU): `eval` (paired
   against the baseline commit), then `kernelpilot time` of the candidate, against `time` of the task's
   baseline taken just before, so each row shows eval's verdict beside the one `time` gives;
2. every hack at once, each in its own clone (same commits, the task folder and baseline copied in): a
   rejection does not depend on a quiet GPU;
3. every eval into one experiment database and `exp failures` of it.
Writes OUT_DIR/suite.json (a row per case) and prints a line per case; exits 0 when every case is as
expected (hacks rejected with their status, look-alikes accepted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VERDICTS = ("improved", "neutral", "regressed")
GEMM_ROOF = {"op": "gemm", "params": {"m": "m", "n": "n", "k": "k"}}
ADD_ROOF = {"op": "elementwise", "params": {"numel": "n", "inputs": 2, "outputs": 1}}


@dataclass
class Plan:
    """Cases of one run: tasks (name -> contract and committed baseline), hacks and look-alikes."""

    cases: Path
    root: Path
    tasks: dict[str, tuple[dict[str, Any], str]]
    hacks: list[tuple[str, str, str, str]]  # candidate, task, expected status, pattern
    benign: list[tuple[str, str, str]]  # candidate, task, pattern
    jobs: int  # hacks evaluated at once
    timeout_s: int  # per eval / time process
    time_args: list[str] = field(default_factory=list)


def gpu_plan() -> Plan:
    bf16 = [
        {"m": 4096, "n": 4096, "k": 4096},
        {"m": 1000, "n": 777, "k": 1100},
        {"m": 2048, "n": 1536, "k": 513},
    ]
    fp32 = [{"m": 2048, "n": 2048, "k": 2048}, {"m": 1000, "n": 777, "k": 1100}]
    add = [{"n": 12_582_912}, {"n": 1_000_003}, {"n": 4097}]  # ~50 us fp32 x + 2y on an H100
    gemm = {"module": "contract_gemm.py", "reduction": "k", "roofline": GEMM_ROOF}
    adds = {"module": "contract_add.py", "shapes": add, "dtype": "fp32", "roofline": ADD_ROOF}
    return Plan(
        cases=HERE / "gpu_cases",
        root=Path("/tmp/guard-suite"),
        tasks={
            "bf16": ({**gemm, "shapes": bf16, "dtype": "bf16"}, "slow_gemm.py"),
            "fp32": ({**gemm, "shapes": fp32, "dtype": "fp32"}, "twice_gemm.py"),
            "add": (adds, "twopass_add.py"),
            "inplace": ({**adds, "in_place": [0]}, "copy_inplace_add.py"),
        },
        hacks=[
            ("side_stream.py", "bf16", "rejected_side_stream", "side-stream work"),
            ("thread_gemm.py", "bf16", "rejected_thread", "background thread"),
            ("timer_patch.py", "bf16", "rejected_timer_replaced", "replaced timer"),
            ("lazy_gemm.py", "bf16", "rejected_lazy_output", "lazy/deferred output"),
            ("stale_gemm.py", "bf16", "rejected_stale_output", "stale buffer"),
            ("cached_gemm.py", "bf16", "rejected_cached_output", "cached result across calls"),
            ("identity_gemm.py", "bf16", "rejected_constant_output", "identity output"),
            ("mutate_gemm.py", "bf16", "rejected_input_mutation", "input mutation"),
            ("tiled_gemm.py", "bf16", "rejected_shape_specific", "shape-specialized"),
            ("stack_aware.py", "bf16", "rejected_impossible", "impossible time"),
            ("timeraware_gemm.py", "bf16", "rejected_timed_output", "different output when timed"),
            ("tf32_gemm.py", "fp32", "rejected_precision", "lower precision (TF32)"),
        ],
        benign=[
            ("side_stream_synced.py", "bf16", "side stream, synchronized"),
            ("honest_gemm.py", "bf16", "near but under the roof (cuBLAS bf16)"),
            ("padded_gemm.py", "bf16", "correct on every shape (K padded to its tile)"),
            ("honest_gemm.py", "fp32", "correct library call (cuBLAS fp32, TF32 off)"),
            ("add_kernel.py", "add", "genuinely faster fused kernel"),
            ("inplace_add.py", "inplace", "in-place op, declared in-place"),
        ],
        jobs=12,
        timeout_s=150,  # the task's --timeout-s (guard.checked gets twice that); an eval gets twice that
    )


def cpu_plan() -> Plan:
    axpy = {"module": "contract_axpy.py", "shapes": [{"n": 4096}, {"n": 1000}, {"n": 4099}], "dtype": "fp32"}
    shapes = [{"m": 256, "n": 256, "k": 256}, {"m": 100, "n": 77, "k": 130}]
    gemm = {"module": "contract_gemm.py", "shapes": shapes, "dtype": "fp32", "reduction": "k"}
    return Plan(
        cases=HERE / "cases",
        root=Path("/tmp/guard-suite-cpu"),
        tasks={
            "axpy": (axpy, "slow_axpy.py"),
            "inplace": ({**axpy, "in_place": [0]}, "honest_axpy.py"),
            "out": ({**axpy, "out": True}, "out_axpy.py"),
            "gemm": (gemm, "honest_gemm.py"),
        },
        hacks=[
            ("thread_axpy.py", "axpy", "rejected_thread", "background thread"),
            ("timer_axpy.py", "axpy", "rejected_timer_replaced", "replaced timer (on import)"),
            ("timerlate_axpy.py", "axpy", "rejected_timer_replaced", "replaced timer (when timed)"),
            ("lazy_axpy.py", "axpy", "rejected_lazy_output", "lazy/deferred output"),
            ("stale_axpy.py", "out", "rejected_stale_output", "stale buffer"),
            ("cached_axpy.py", "axpy", "rejected_cached_output", "cached result across calls"),
            ("identity_axpy.py", "axpy", "rejected_constant_output", "identity output"),
            ("constant_axpy.py", "axpy", "rejected_constant_output", "constant output"),
            ("inplace_axpy.py", "axpy", "rejected_input_mutation", "input mutation"),
            ("tiled_axpy.py", "axpy", "rejected_shape_specific", "shape-specialized"),
            ("timeraware_axpy.py", "axpy", "rejected_timed_output", "different output when timed"),
            ("lowp_gemm.py", "gemm", "rejected_precision", "lower precision (fp16)"),
            ("noisy_axpy.py", "axpy", "rejected_nondeterministic", "nondeterministic"),
        ],
        benign=[
            ("honest_axpy.py", "axpy", "correct on every shape"),
            ("fused_axpy.py", "axpy", "fused kernel"),
            ("inplace_axpy.py", "inplace", "in-place op, declared in-place"),
            ("out_axpy.py", "out", "writes every element of the out buffer"),
            ("honest_gemm.py", "gemm", "correct library call (numpy matmul)"),
        ],
        jobs=2,
        timeout_s=120,
        time_args=["--device", "cpu"],
    )


def sh(argv: list[str], cwd: Path, timeout_s: int, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    try:
        p = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired as exc:
        return 124, "", f"killed after {timeout_s} s: {exc}"
    return p.returncode, p.stdout, p.stderr


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelpilot", "--json", *args]


def task_dir(root: Path, task: str) -> Path:
    return root / ".kernelpilot" / "tasks" / task


def git_repo(plan: Plan) -> None:
    root = plan.root
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(plan.cases, root)
    (root / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    for name, (contract, base) in plan.tasks.items():
        fn = "gemm" if "gemm" in contract["module"] else ("add" if "add" in contract["module"] else "axpy")
        shutil.copy(root / base, root / f"kernel_{name}.py")
        (root / f"contract_{name}.json").write_text(
            json.dumps({**contract, "candidate": f"kernel_{name}.py:{fn}"})
        )
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.email=s@x", "-c", "user.name=s", "commit", "-qm", "base"]):  # fmt: skip
        sh(argv, root, 60)
    for name in plan.tasks:
        code, _, err = sh(
            cli("task", "create", "--name", name, "--contract", f"contract_{name}.json", "--allowed-file",
                f"kernel_{name}.py", "--workdir", str(root), "--runs", "2", "--warmup", "1", "--timing-mode",
                "cold", "--cv-threshold", "0.1", "--timeout-s", str(plan.timeout_s)),
            root, 60,
        )  # fmt: skip
        assert code == 0, err


def baselines(plan: Plan) -> None:
    def one(name: str) -> str:
        code, out, err = sh(cli("eval", str(task_dir(plan.root, name)), "--refresh-baseline"), plan.root,
                            plan.timeout_s * 2)  # fmt: skip
        med = json.loads(out).get("baseline", {}).get("stats", {}).get("median") if code == 0 else err[-1500:]
        return f"baseline {name}: rc {code} median {med}"

    # one at a time: four baselines timed at once on one GPU slowed each other's traced kernels, and the
    # guard rejected the fp32 baseline as rejected_side_stream (H100, 2026-11-24)
    for name in plan.tasks:
        print(one(name), flush=True)


def time_median(plan: Plan, root: Path, task: str, out: Path, tag: str) -> float | None:
    """`kernelpilot time` of the task's current candidate (the guard's factory, as eval loads it)."""
    env = {**os.environ, "KERNELPILOT_GUARD_TASK": str(task_dir(root, task) / "task.json")}
    argv = cli("time", "kernelpilot.guard.timed:make", "--timing", "cold", "--verdict", "cold",
               "--rotate", "2", "--no-kernels", *plan.time_args)  # fmt: skip
    _, o, e = sh(argv, root, plan.timeout_s, env)
    (out / "time").mkdir(exist_ok=True)
    (out / "time" / f"{tag}.json").write_text(o or e)
    try:
        return float(json.loads(o)["stats"]["median"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def row_of(
    cand: str, task: str, pattern: str, expect: str, rc: int, out: str, err: str, wall: float
) -> dict[str, Any]:
    base = {"candidate": cand, "task": task, "pattern": pattern, "expect": expect, "wall_s": round(wall, 1)}
    try:
        rec = json.loads(out)["record"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return {**base, "status": "ERROR", "ok": False, "evidence": (err or out)[-2000:], "rc": rc}
    status = rec["status"]
    rej = rec.get("rejection") or {}
    phys = rec.get("physics") or {}
    return {
        **base, "status": status, "ok": status in VERDICTS if expect == "accepted" else status == expect,
        "evidence": rej.get("evidence") or phys.get("arithmetic") or rec.get("output_tail", "")[-300:],
        "method": rec.get("method"), "ratio_median": rec.get("ratio_median"), "ratio_ci": rec.get("ratio_ci"),
        "pairs": rec.get("pairs"), "speedup": rec.get("speedup"), "speedup_ci": rec.get("speedup_ci"),
        "candidate_median": rec.get("candidate_median"), "baseline_median": rec.get("baseline_median"),
        "flagged": phys.get("flagged"), "correctness": rec.get("correctness"), "record": rec,
    }  # fmt: skip


def time_verdict(
    base_us: float | None, cand_us: float | None, min_effect: float = 0.01
) -> tuple[float | None, str]:
    """The verdict `time`'s two medians give (unpaired, minutes apart), by eval's min_effect rule."""
    if not base_us or not cand_us:
        return None, "?"
    sp = base_us / cand_us
    return sp, "improved" if sp >= 1 + min_effect else "regressed" if sp <= 1 / (
        1 + min_effect
    ) else "neutral"


def print_row(row: dict[str, Any]) -> None:
    mark = "PASS" if row["ok"] else "FAIL"
    print(f"{mark} {row['pattern']:46s} {row['status']:26s} ({row['wall_s']:.1f} s) "
          f"{str(row['evidence'])[:400]}", flush=True)  # fmt: skip
    if row.get("time_verdict"):
        agrees = "agrees" if row["time_agrees"] else "DIFFERS"
        print(f"     eval: {row['method']} ratio {row.get('ratio_median')} CI {row.get('ratio_ci')} "
              f"({row.get('pairs')} pairs), speed-up {row.get('speedup')}; time: base "
              f"{row.get('time_base_us')} us -> {row.get('time_cand_us')} us, speed-up "
              f"{row.get('time_speedup')} = {row['time_verdict']} ({agrees}); flagged {row.get('flagged')}",
              flush=True)  # fmt: skip


def run_benign(plan: Plan, out: Path, rows: list[dict[str, Any]]) -> None:
    """One at a time: `time` of the task's baseline (once), eval of the candidate, `time` of it."""
    base_time: dict[str, float | None] = {}
    for cand, task, pattern in plan.benign:
        kernel = plan.root / f"kernel_{task}.py"
        if task not in base_time:
            shutil.copy(plan.root / plan.tasks[task][1], kernel)
            base_time[task] = time_median(plan, plan.root, task, out, f"baseline_{task}")
        shutil.copy(plan.root / cand, kernel)
        began = time.perf_counter()
        rc, o, e = sh(cli("eval", str(task_dir(plan.root, task))), plan.root, plan.timeout_s * 2)
        row = row_of(cand, task, pattern, "accepted", rc, o, e, time.perf_counter() - began)
        cand_us = time_median(plan, plan.root, task, out, f"{cand[:-3]}_{task}")
        sp, verdict = time_verdict(base_time[task], cand_us)
        row.update(time_base_us=base_time[task], time_cand_us=cand_us, time_speedup=sp, time_verdict=verdict,
                   time_agrees=verdict == row["status"], clone=str(plan.root))  # fmt: skip
        rows.append(row)
        print_row(row)
        save(out, rows)
        shutil.copy(plan.root / plan.tasks[task][1], kernel)  # the next task's eval sees no change here


def clone_for(plan: Plan, cand: str, task: str) -> Path:
    """A clone of the scratch repo (same commits) with the task folder and its baseline, the candidate in."""
    dst = Path(f"{plan.root}-{cand[:-3]}")
    if dst.exists():
        shutil.rmtree(dst)
    sh(["git", "clone", "-q", str(plan.root), str(dst)], plan.root.parent, 60)
    shutil.copytree(
        task_dir(plan.root, task), task_dir(dst, task), ignore=shutil.ignore_patterns(".baseline-tree")
    )
    shutil.copy(dst / cand, dst / f"kernel_{task}.py")
    return dst


def save(out: Path, rows: list[dict[str, Any]]) -> None:
    """suite.json after every row: a run cut off by its timeout still leaves what it found."""
    (out / "suite.json").write_text(json.dumps(rows, indent=1, default=str))


def run_hacks(plan: Plan, out: Path, rows: list[dict[str, Any]]) -> None:
    def one(case: tuple[str, str, str, str]) -> dict[str, Any]:
        cand, task, expect, pattern = case
        dst = clone_for(plan, cand, task)
        began = time.perf_counter()
        rc, o, e = sh(cli("eval", str(task_dir(dst, task))), dst, plan.timeout_s * 2)
        return {
            **row_of(cand, task, pattern, expect, rc, o, e, time.perf_counter() - began),
            "clone": str(dst),
        }

    with ThreadPoolExecutor(plan.jobs) as pool:
        for row in pool.map(one, plan.hacks):
            rows.append(row)
            print_row(row)
            save(out, rows)


def record_db(plan: Plan, out: Path, rows: list[dict[str, Any]]) -> None:
    """Every eval in one experiment database (in-process), then what `exp failures` shows."""
    from kernelpilot.experiments.api import ExpFailuresRequest, ExpIngestRequest
    from kernelpilot.experiments.ops import failures, ingest

    db = str(out / "experiments.sqlite")
    for r in rows:
        result = task_dir(Path(r["clone"]), r["task"]) / "result.json"
        if Path(r["clone"]) != plan.root and result.is_file():
            ingest(ExpIngestRequest(db=db, path=str(result), change=r["pattern"], dtype=r["task"]))
    for task in plan.tasks:  # the look-alikes' evals, one ledger line each
        ledger = task_dir(plan.root, task) / "ledger.jsonl"
        if ledger.is_file():
            ingest(ExpIngestRequest(db=db, path=str(ledger), dtype=task))
    (out / "exp_failures.txt").write_text(failures(ExpFailuresRequest(db=db, limit=50)).render_text())


def main(argv: list[str]) -> int:
    plan = cpu_plan() if "--cpu" in argv else gpu_plan()
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        print("usage: python tests/guard/gpu_suite.py [--cpu] OUT_DIR", file=sys.stderr)
        return 2
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    git_repo(plan)
    baselines(plan)
    print(f"[{time.perf_counter() - t0:.0f} s] baselines done", flush=True)
    rows: list[dict[str, Any]] = []
    try:
        run_benign(plan, out, rows)
        print(f"[{time.perf_counter() - t0:.0f} s] look-alikes done", flush=True)
        run_hacks(plan, out, rows)
        print(f"[{time.perf_counter() - t0:.0f} s] hacks done", flush=True)
        record_db(plan, out, rows)
    finally:
        save(out, rows)
    good = sum(r["ok"] for r in rows)
    agree = [r for r in rows if r.get("time_verdict")]
    same = sum(r["time_agrees"] for r in agree)
    print(f"[{time.perf_counter() - t0:.0f} s] suite: {good}/{len(rows)} cases as expected; honest verdicts "
          f"agreeing with `time`: {same}/{len(agree)}", flush=True)  # fmt: skip
    return 0 if good == len(rows) == len(plan.hacks) + len(plan.benign) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
