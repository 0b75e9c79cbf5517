"""GPU hack suite, end to end through `kernelpilot eval` with a contract (run by /work/devreq/guard.sh).

Not a pytest module: it needs an NVIDIA GPU with torch. Usage: python tests/guard/gpu_suite.py OUT_DIR.
Builds a scratch git repository of tests/guard/gpu_cases with two contract tasks (bf16 and fp32 GEMM),
measures their baselines, then evaluates every hack in its own clone of the repository (same commits, the
task folder with its baseline copied in) all at once: a rejection does not depend on a quiet GPU. The
benign candidates are then evaluated one at a time (their verdicts are timing verdicts) and timed with
`kernelpilot time` for comparison. Records the traces the replay tests read, stores every eval in one
experiment database and dumps `exp failures`. Writes OUT_DIR/suite.json and a line per case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "gpu_cases"
ROOT = Path("/tmp/guard-suite")
SHAPES_BF16 = [
    {"m": 4096, "n": 4096, "k": 4096},
    {"m": 1000, "n": 777, "k": 1100},
    {"m": 2048, "n": 1536, "k": 513},
]
SHAPES_FP32 = [{"m": 2048, "n": 2048, "k": 2048}, {"m": 1000, "n": 777, "k": 1100}]
GEMM_ROOF = {"op": "gemm", "params": {"m": "m", "n": "n", "k": "k"}}
HACKS = [
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
]
BENIGN = [
    ("honest_gemm.py", "bf16", "correct library call (near the roof)"),
    ("side_stream_synced.py", "bf16", "side stream, synchronized"),
]
RECORD_WITH_HACKS: tuple[str, ...] = ()  # side_stream, thread_gemm, stack_aware: recorded 2026-11-23 21:00
RECORD_ALONE = ("side_stream_synced.py",)  # its timed figure needs a quiet GPU (honest_gemm: first window)


def sh(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelpilot", "--json", *args]


def git_repo() -> None:
    if ROOT.exists():
        shutil.rmtree(ROOT)
    shutil.copytree(CASES, ROOT)
    (ROOT / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    for name, shapes, base in (
        ("bf16", SHAPES_BF16, "slow_gemm.py"),
        ("fp32", SHAPES_FP32, "honest_gemm.py"),
    ):
        shutil.copy(ROOT / base, ROOT / f"kernel_{name}.py")
        contract = {"module": "contract_gemm.py", "candidate": f"kernel_{name}.py:gemm", "shapes": shapes,
                    "dtype": name, "reduction": "k", "roofline": GEMM_ROOF}  # fmt: skip
        (ROOT / f"contract_{name}.json").write_text(json.dumps(contract))
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.email=s@x", "-c", "user.name=s", "commit", "-qm", "base"]):  # fmt: skip
        sh(argv, ROOT)
    for name in ("bf16", "fp32"):
        p = sh(cli("task", "create", "--name", name, "--contract", f"contract_{name}.json", "--allowed-file",
                   f"kernel_{name}.py", "--workdir", str(ROOT), "--runs", "2", "--timing-mode", "cold",
                   "--cv-threshold", "0.1", "--op", "gemm", "--dtype", name, "--timeout-s", "120"),
               ROOT)  # fmt: skip
        assert p.returncode == 0, p.stderr


def task_dir(root: Path, task: str) -> Path:
    return root / ".kernelpilot" / "tasks" / task


def clone_for(cand: str, task: str, tag: str = "") -> Path:
    """A clone of the scratch repo (same commits) with the task folder and its baseline, the candidate in."""
    dst = Path(f"{ROOT}-{cand[:-3]}{tag}")
    if dst.exists():
        shutil.rmtree(dst)
    sh(["git", "clone", "-q", str(ROOT), str(dst)], ROOT.parent)
    shutil.copytree(task_dir(ROOT, task), task_dir(dst, task))
    shutil.copy(dst / cand, dst / f"kernel_{task}.py")
    return dst


def start(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = p.communicate(timeout=200)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, out, err


def row_of(
    cand: str, pattern: str, expect: str, code: int, out: str, err: str, wall: float
) -> dict[str, Any]:
    try:
        rec = json.loads(out)["record"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return {"candidate": cand, "pattern": pattern, "expect": expect, "status": "ERROR", "ok": False,
                "evidence": (err or out)[-2000:], "wall_s": wall}  # fmt: skip
    status = rec["status"]
    ok = status in ("improved", "neutral", "regressed") if expect == "accepted" else status == expect
    rej = rec.get("rejection") or {}
    phys = rec.get("physics") or {}
    return {
        "candidate": cand, "pattern": pattern, "expect": expect, "status": status, "ok": ok,
        "evidence": rej.get("evidence") or phys.get("arithmetic") or rec.get("output_tail", "")[-300:],
        "candidate_median": rec.get("candidate_median"), "speedup": rec.get("speedup"),
        "speedup_ci": rec.get("speedup_ci"), "flagged": phys.get("flagged"),
        "correctness": rec.get("correctness"),
        "wall_s": wall, "record": rec,
    }  # fmt: skip


def record_trace(cand: str, task_root: Path, out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "KERNELPILOT_GUARD_TASK": str(task_dir(task_root, "bf16") / "task.json")}
    return start(
        [sys.executable, str(HERE / "record_trace.py"), str(out / f"trace_{cand[:-3]}.json")], task_root, env
    )


def time_closure(root: Path, out: Path, name: str) -> float | None:
    env = {**os.environ, "KERNELPILOT_GUARD_TASK": str(task_dir(root, "bf16") / "task.json")}
    argv = cli(
        "time", "kernelpilot.guard.timed:make", "--timing", "cold", "--verdict", "cold", "--rotate", "2"
    )
    p = sh(argv, root, env)
    (out / f"time_{name}.json").write_text(p.stdout or p.stderr)
    try:
        return float(json.loads(p.stdout)["stats"]["median"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def print_row(row: dict[str, Any]) -> None:
    print(f"{'PASS' if row['ok'] else 'FAIL'} {row['pattern']:32s} {row['status']:26s} "
          f"({row['wall_s']:.1f} s) "
          f"{str(row['evidence'])[:400]}", flush=True)  # fmt: skip
    if row.get("correctness"):
        print(f"     guard harness: {row['correctness']}", flush=True)


def run_benign(out: Path, rows: list[dict[str, Any]]) -> None:
    """The benign candidates one at a time on a quiet GPU: their verdicts are timing verdicts."""
    for cand, task, pattern in BENIGN:
        shutil.copy(ROOT / cand, ROOT / f"kernel_{task}.py")
        began = time.perf_counter()
        code, o, e = finish(start(cli("eval", str(task_dir(ROOT, task))), ROOT))
        row = row_of(cand, pattern, "accepted", code, o, e, time.perf_counter() - began)
        row["clone"] = str(ROOT)
        row["time_cold_median"] = time_closure(ROOT, out, cand[:-3])
        base_us = (row.get("record") or {}).get("baseline_median")
        if base_us and row["time_cold_median"]:  # the verdict `time`'s figure gives against the same baseline
            row["time_speedup"] = base_us / row["time_cold_median"]
        rows.append(row)
        print_row(row)
        print(f"     eval: median {row.get('candidate_median')} us, speed-up {row.get('speedup')} CI "
              f"{row.get('speedup_ci')}, flagged {row.get('flagged')}; kernelpilot time: cold "
              f"{row['time_cold_median']} us, speed-up {row.get('time_speedup')}", flush=True)  # fmt: skip
        if cand in RECORD_ALONE:
            code, o, e = finish(record_trace(cand, ROOT, out))
            print(f"     recorded {cand}: {o.strip()[-200:]} {e.strip()[-500:] if code else ''}", flush=True)
        (out / "suite.json").write_text(json.dumps(rows, indent=1, default=str))


def run_hacks(out: Path, rows: list[dict[str, Any]]) -> None:
    """Every hack at once, each in its own clone: a rejection does not depend on a quiet GPU."""
    running = []
    for cand, task, expect, pattern in HACKS:
        dst = clone_for(cand, task)
        proc = start(cli("eval", str(task_dir(dst, task))), dst)
        running.append((cand, expect, pattern, dst, time.perf_counter(), proc))
    traces = [(c, record_trace(c, clone_for(c, "bf16", "-trace"), out)) for c in RECORD_WITH_HACKS]
    for cand, expect, pattern, dst, began, proc in running:
        code, o, e = finish(proc)
        rows.append(row_of(cand, pattern, expect, code, o, e, time.perf_counter() - began))
        rows[-1]["clone"] = str(dst)
        print_row(rows[-1])
        (out / "suite.json").write_text(json.dumps(rows, indent=1, default=str))
    for c, p in traces:
        code, o, e = finish(p)
        print(f"     recorded {c}: {o.strip()[-200:]} {e.strip()[-500:] if code else ''}", flush=True)


def record_db(out: Path, rows: list[dict[str, Any]]) -> None:
    """Every eval in one experiment database (in-process), then what `exp failures` shows."""
    from kernelpilot.experiments.api import ExpFailuresRequest, ExpIngestRequest
    from kernelpilot.experiments.ops import failures, ingest

    db = str(out / "experiments.sqlite")
    for r in rows:
        clone = Path(r.get("clone", ROOT))
        task = "fp32" if r["candidate"] == "tf32_gemm.py" else "bf16"
        result = task_dir(clone, task) / "result.json"
        if clone != ROOT and result.is_file():
            ingest(
                ExpIngestRequest(db=db, path=str(result), change=r["pattern"], operator="gemm", dtype=task)
            )
    ledger = task_dir(ROOT, "bf16") / "ledger.jsonl"  # the benign evals, one line each
    if ledger.is_file():
        ingest(ExpIngestRequest(db=db, path=str(ledger), operator="gemm", dtype="bf16"))
    (out / "exp_failures.txt").write_text(failures(ExpFailuresRequest(db=db, limit=50)).render_text())


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    git_repo()
    bases = {
        t: start(cli("eval", str(task_dir(ROOT, t)), "--refresh-baseline"), ROOT) for t in ("bf16", "fp32")
    }
    for t, p in bases.items():
        code, o, e = finish(p)
        brief = json.loads(o).get("baseline", {}).get("stats", {}).get("median") if code == 0 else e[-1500:]
        print(f"baseline {t}: rc {code} {brief}", flush=True)
    print(f"[{time.perf_counter() - t0:.0f} s] baselines done", flush=True)
    rows: list[dict[str, Any]] = []
    run_benign(out, rows)
    print(f"[{time.perf_counter() - t0:.0f} s] benign done", flush=True)
    run_hacks(out, rows)
    print(f"[{time.perf_counter() - t0:.0f} s] hacks done", flush=True)
    record_db(out, rows)
    (out / "suite.json").write_text(json.dumps(rows, indent=1, default=str))
    good = sum(r["ok"] for r in rows)
    print(f"[{time.perf_counter() - t0:.0f} s] suite: {good}/{len(rows)} cases as expected")
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
