"""Drive the skills' workflow end to end on a GPU with kernelpilot's own CLI, and keep a transcript.

Run on the device machine from the repository root (see docs/walkthrough.md):
    python3 docs/walkthrough/walkthrough.py OUTDIR [--evals-only]
Every step is a real `kernelpilot ...` command (as a subprocess, `--json` where numbers are read back);
the transcript (commands + their text output) and a summary of the numbers go to OUTDIR.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = Path(next((a for a in sys.argv[1:] if not a.startswith("--")), "/tmp/walk-out"))
W = Path("/tmp/walk")
WS = W / "ws" / "rmsnorm-h100"
TASK = WS / ".kernelpilot" / "tasks" / "rmsnorm"
PY = sys.executable
TRANSCRIPT: list[str] = []
SUMMARY: dict[str, object] = {}


def kp(*args: str, json_out: bool = False, check: bool = True) -> object:
    argv = [PY, "-m", "kernelpilot", *(["--json"] if json_out else []), *args]
    shown = "kernelpilot " + " ".join(a if " " not in a and a else repr(a) for a in args)
    t0 = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, text=True, cwd=W)
    dt = time.perf_counter() - t0
    TRANSCRIPT.append(f"$ {shown}\n# exit {res.returncode}, {dt:.1f} s\n{res.stdout}{res.stderr}")
    print(TRANSCRIPT[-1][-3000:], flush=True)
    if check and res.returncode not in (0, 3):
        raise SystemExit(f"step failed: {shown}")
    if json_out:
        try:
            return json.loads(res.stdout)
        except json.JSONDecodeError:
            return {}
    return res.stdout


def sh(*argv: str) -> str:
    res = subprocess.run(list(argv), capture_output=True, text=True, cwd=W)
    TRANSCRIPT.append(f"$ {' '.join(argv)}\n# exit {res.returncode}\n{res.stdout}{res.stderr}")
    print(TRANSCRIPT[-1][-2000:], flush=True)
    return res.stdout


def step(title: str) -> None:
    TRANSCRIPT.append(f"\n## {title}\n")
    print(f"\n######## {title}", flush=True)


def newest_cubin(kernel_name: str) -> str | None:
    hits = sorted(glob.glob(str(W / "triton-cache" / "**" / f"{kernel_name}.cubin"), recursive=True),
                  key=os.path.getmtime)
    return hits[-1] if hits else None


def profile(version: str, mode: str = "roofline") -> dict:
    prof = kp("profile", "run", "--mode", mode, "--kernel-name", "regex:_rmsnorm", "--launch-skip", "8",
              "--launch-count", "1", "--workdir", str(WS), "--",
              PY, str(W / "bench_rmsnorm.py"), "rmsnorm.py", json_out=True)
    (WS / "profiles" / f"{version}-{mode}.json").write_text(json.dumps(prof, indent=1))
    verdict = kp("bottleneck", "--profile-json", json.dumps(prof), json_out=True)
    kp("bottleneck", "--profile-json", json.dumps(prof))
    return verdict if isinstance(verdict, dict) else {}


def iteration(version: int, src: str, change: str, hypothesis: str, expected: float, parent: int) -> None:
    step(f"Iteration v{version}: {change}")
    plan = kp("plan", "--workspace", str(WS), "--title", change, "--hypothesis", hypothesis,
              "--expected-speedup", str(expected), "--for-version", str(version), json_out=True)
    plan_path = plan.get("path", change) if isinstance(plan, dict) else change
    shutil.copy(W / src, WS / "rmsnorm.py")
    sh(PY, str(W / "check_rmsnorm.py"), str(WS / "rmsnorm.py"))
    ev = kp("eval", str(TASK), "--record-db", str(W / "experiments.db"), "--change", change, json_out=True)
    kp("ledger", str(TASK), check=False)
    verdict = profile(f"v{version}")
    v = (verdict.get("verdicts") or [{}])[0] if isinstance(verdict, dict) else {}
    rec = ev.get("record") or {} if isinstance(ev, dict) else {}
    SUMMARY[f"v{version}"] = {"eval": {k: rec.get(k) for k in ("status", "speedup", "speedup_ci",
                                                                 "baseline_median", "candidate_median",
                                                                 "method", "ratio_median", "ratio_ci", "pairs",
                                                                 "clocks")},
                              "verdict": v.get("verdict"), "memory_level": v.get("memory_level")}
    check = json.loads(sh(PY, str(W / "check_rmsnorm.py"), str(WS / "rmsnorm.py")).strip() or "{}")
    args = ["memory", "create", "--workspace", str(WS), "--change", change, "--parent", str(parent),
            "--eval-result", str(TASK / "result.json"), "--plan", plan_path, "--expected-speedup", str(expected),
            "--max-rel-err", str(check.get("max_rel_err", 0)), "--correct" if check.get("pass") else "--no-correct"]
    if v.get("verdict"):
        args += ["--verdict", v["verdict"]]
    kp(*args)


def _kept(ti: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """The workspace without git internals and without eval's baseline-tree cache."""
    return None if "/.git/" in ti.name or "/.baseline-tree" in ti.name else ti


def evals_only() -> None:
    """Only the verdicts: task, baseline, then v1 and v2 evaluated against the baseline commit (each eval
    times the candidate and the baseline together, paired; docs/walkthrough.md, "Verdicts, paired")."""
    step("Workspace, task and baseline (v0)")
    shutil.copy(W / "rmsnorm_v0.py", W / "rmsnorm.py")
    kp("workspace", "init", "rmsnorm-h100", "--kernel", str(W / "rmsnorm.py"), "--platform", "H100",
       "--framework", "triton", "--dtype", "bf16", "--shape", "16384x8192", "--root", str(W / "ws"))
    kp("task", "create", "--name", "rmsnorm", "--workdir", str(WS),
       "--time-spec", "rmsnorm.py:make", "--timing-mode", "cold", "--allowed-file", "rmsnorm.py",
       "--correctness-command", json.dumps([PY, str(W / "check_rmsnorm.py"), "rmsnorm.py"]),
       "--op", "rmsnorm", "--shape", "16384x8192", "--dtype", "bf16", "--runs", "10")
    SUMMARY["v0_baseline"] = (kp("eval", str(TASK), "--refresh-baseline", json_out=True) or {}).get("baseline")
    keys = ("status", "speedup", "speedup_ci", "baseline_median", "candidate_median", "method", "ratio_median",
            "ratio_ci", "pairs", "clocks")
    for version, src in ((0, "rmsnorm_v0.py"), (1, "rmsnorm_v1.py"), (2, "rmsnorm_v2.py")):
        step(f"eval v{version} against the baseline commit (v0), paired")
        shutil.copy(W / src, WS / "rmsnorm.py")
        ev = kp("eval", str(TASK), json_out=True)
        rec = (ev.get("record") or {}) if isinstance(ev, dict) else {}
        SUMMARY[f"v{version}"] = {"eval": {k: rec.get(k) for k in keys}}
    kp("ledger", str(TASK))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(W, ignore_errors=True)
    W.mkdir(parents=True)
    for f in HERE.glob("*.py"):
        shutil.copy(f, W / f.name)
    os.environ["TRITON_CACHE_DIR"] = str(W / "triton-cache")
    os.environ["KERNELPILOT_DB"] = str(W / "experiments.db")
    if "--evals-only" in sys.argv:
        evals_only()
        return

    step("doctor")
    kp("doctor")

    step("Step 0: cited specs, roofline, stop conditions -> workspace README")
    shutil.copy(W / "rmsnorm_v0.py", W / "rmsnorm.py")
    kp("spec", "H100", "memory_bandwidth_tb_s")
    kp("roofline", "H100", "--op", "rmsnorm", "--rows", "16384", "--cols", "8192", "--dtype", "bf16")
    kp("workspace", "init", "rmsnorm-h100", "--kernel", str(W / "rmsnorm.py"), "--platform", "H100",
       "--framework", "triton", "--dtype", "bf16", "--shape", "16384x8192",
       "--goal", "RMSNorm over 16384x8192 bf16 rows at >= 90% of the H100's memory roofline",
       "--roofline-args", json.dumps({"op": "rmsnorm", "rows": 16384, "cols": 8192}), "--root", str(W / "ws"))
    TRANSCRIPT.append("### README.md (rendered)\n" + (WS / "README.md").read_text())
    kp("audit", str(WS))

    step("Baseline: correctness, timing, task, memory v0")
    check = json.loads(sh(PY, str(W / "check_rmsnorm.py"), str(WS / "rmsnorm.py")).strip() or "{}")
    t = kp("time", f"{WS / 'rmsnorm.py'}:make", "--runs", "300", "--warmup-min-ms", "500", json_out=True)
    kp("time", f"{WS / 'rmsnorm.py'}:make", "--runs", "300", "--warmup-min-ms", "500")
    SUMMARY["v0_time"] = (
        {m: (t.get(m) or {}).get("stats") for m in ("cold", "warm")} if isinstance(t, dict) else None
    )
    kp("task", "create", "--name", "rmsnorm", "--workdir", str(WS),
       "--time-spec", "rmsnorm.py:make", "--timing-mode", "cold", "--allowed-file", "rmsnorm.py",
       "--correctness-command", json.dumps([PY, str(W / "check_rmsnorm.py"), "rmsnorm.py"]),
       "--op", "rmsnorm", "--shape", "16384x8192", "--dtype", "bf16", "--runs", "10")
    base = kp("eval", str(TASK), "--refresh-baseline", json_out=True)
    b = (base.get("baseline") or {}).get("stats", {}) if isinstance(base, dict) else {}
    SUMMARY["v0_baseline"] = b

    step("Bottleneck: roofline-mode profile + full profile + ISA fit of the baseline")
    verdict = profile("v0")
    profile("v0", mode="full")
    cubin = newest_cubin("_rmsnorm_kernel")
    if cubin:
        kp("isa", "fit", cubin, "--block-size", "128", check=False)
        kp("isa", "resources", cubin, check=False)
    v = (verdict.get("verdicts") or [{}])[0]
    SUMMARY["v0"] = {"verdict": v.get("verdict"), "memory_level": v.get("memory_level")}
    args = ["memory", "create", "--workspace", str(WS), "--change", "baseline: two-pass Triton RMSNorm",
            "--version", "0", "--max-rel-err", str(check.get("max_rel_err", 0)),
            "--correct" if check.get("pass") else "--no-correct", "--median", str(b.get("median", 0)),
            "--unit", "us"]
    if v.get("verdict"):
        args += ["--verdict", v["verdict"]]
    kp(*args)
    kp("report", "--workspace", str(WS), "--kind", "baseline")

    iteration(1, "rmsnorm_v1.py", "one pass: row held in registers",
              "v0 reads each row twice (pass 1 sums squares, pass 2 normalises): 1.5x the minimum bytes. "
              "One pass over the row moves 2/3 of the bytes, so the memory-bound kernel should be ~1.4x faster.",
              1.4, 0)
    iteration(2, "rmsnorm_v2.py", "16 warps per row instead of 4",
              "v1 gives each of its 128 threads 64 elements of the row; 16 warps cut that to 16 elements (fewer "
              "registers per thread) and spread each row's loads over 4x the threads: expect ~1.1x.",
              1.1, 1)

    step("Final report, history, experiment database")
    kp("memory", "summary", "--workspace", str(WS))
    kp("report", "--workspace", str(WS), "--kind", "final", "--html")
    kp("audit", str(WS))
    kp("exp", "top", "--db", str(W / "experiments.db"))
    kp("exp", "list", "--db", str(W / "experiments.db"))

    (OUT / "transcript.md").write_text("\n".join(TRANSCRIPT))
    (OUT / "summary.json").write_text(json.dumps(SUMMARY, indent=1, default=str))
    with tarfile.open(OUT / "workspace.tar.gz", "w:gz") as tar:
        tar.add(WS, arcname="rmsnorm-h100", filter=_kept)
    print(json.dumps(SUMMARY, indent=1, default=str))


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit("walkthrough: terminated (SIGTERM)"))
    try:
        main()
    finally:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / "transcript.md").write_text("\n".join(TRANSCRIPT))
        (OUT / "summary.json").write_text(json.dumps(SUMMARY, indent=1, default=str))
