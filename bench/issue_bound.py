"""Issue 32's acceptance run for the instruction-issue floor, on one GPU (H100/H200; about 2 minutes).

For each kernel of bench/issue_bound_kernels.py (MoE top-k gating, a row log-sum-exp + entropy, a bitonic
row sort, a fused qk-RMSNorm + RoPE), every step on its own (one failing keeps the others):
1. launch it once through Triton and save the code object Triton compiled (`<name>.cubin`);
2. check it against a torch reference (ids of the gating as a tie-tolerant set);
3. time it with `kernelpilot time` (cold: L2 flushed, and warm; 100 runs each);
4. profile one launch with ncu `--set full` plus the per-pipe counters (`sm__inst_executed_pipe_<p>.sum` and
   their `.sum.peak_sustained`, those this ncu knows) as `--csv --page raw` (`<name>_raw.csv`);
5. `kernelpilot roofline` with the cubin + grid + block (static issue floor), the ncu page (measured issue
   floor) and the cold time: which floor binds, the stop target, and whether any time is under a floor.
A summary table is the last thing printed; every number is also in issue_bound.json.

Usage (repository root, device/env.sh sourced): python3 bench/issue_bound.py --out DIR [--only gating]
The program ncu profiles: python3 bench/issue_bound.py --launch NAME
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
KFILE = BENCH / "issue_bound_kernels.py"
PIPES = ("alu", "fma", "fmaheavy", "fmalite", "lsu", "xu", "uniform", "adu", "cbu")
NCU_S = 75  # one ncu try at most; less when the run's budget (BUDGET_S, under the script's 230 s) is short
BUDGET_S = 215.0
T0 = time.time()


def _kernels() -> Any:
    sys.path.insert(0, str(BENCH))
    import issue_bound_kernels

    return issue_bound_kernels


def launch_main(name: str, reps: int) -> None:
    """The profiled program: build the inputs, launch `reps` times, synchronize."""
    import torch

    spec = _kernels().SPECS[name]()
    for _ in range(reps):
        spec.launch()
    torch.cuda.synchronize()


def _cubin(compiled: Any, kname: str) -> bytes:
    asm = getattr(compiled, "asm", None) or {}
    if isinstance(asm, dict) and asm.get("cubin"):
        return bytes(asm["cubin"])
    cache = Path(os.environ.get("TRITON_CACHE_DIR", Path.home() / ".triton" / "cache"))
    found = sorted(cache.rglob(f"{kname}.cubin"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise RuntimeError(f"no cubin for {kname}: not on the compiled kernel, not in {cache}")
    return found[-1].read_bytes()


def step_build(name: str, out: Path, row: dict[str, Any]) -> Any:
    import torch

    spec = _kernels().SPECS[name]()
    compiled = spec.launch()
    torch.cuda.synchronize()
    path = out / f"{spec.name}.cubin"
    path.write_bytes(_cubin(compiled, spec.name))
    row.update(
        kernel=spec.name,
        cubin=str(path),
        grid=[spec.grid],
        block=[32 * spec.num_warps],
        roofline_op=spec.roofline,
    )
    ok, note = spec.check()
    row.update(correct=bool(ok), check=note)
    return spec


def step_time(name: str, row: dict[str, Any]) -> None:
    from kernelpilot.timing.core import time_kernel
    from kernelpilot.timing.models import TimeRequest

    with tempfile.TemporaryDirectory(prefix="kp-ib-") as tmp:
        res = time_kernel(TimeRequest(spec=f"{KFILE}:make_{name}", runs=100, workdir=tmp, kernels=False))
    assert res.cold is not None and res.warm is not None
    row.update(
        cold_us=res.cold.stats.median,
        cold_cv=res.cold.stats.cv,
        warm_us=res.warm.stats.median,
        warm_cv=res.warm.stats.cv,
        cold_method=str(getattr(res.cold, "method", "")),
    )


def known_extras(ncu: str, chip: str | None) -> list[str]:
    """The per-pipe counters this ncu knows for the chip (an unknown metric would fail the whole profile)."""
    want = [f"sm__inst_executed_pipe_{p}" for p in PIPES]
    if chip is None:
        return []
    try:
        q = subprocess.run(
            [ncu, "--query-metrics", "--chip", chip], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        return []
    names = {ln.split()[0] for ln in q.stdout.splitlines() if ln.strip()}
    base = [m for m in want if m in names]
    return [f"{m}.sum" for m in base] + [f"{m}.sum.peak_sustained" for m in base]


def step_ncu(name: str, kname: str, out: Path, extras: list[str], row: dict[str, Any]) -> None:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise RuntimeError("ncu not on PATH")
    raw = out / f"{name}_raw.csv"
    base = [ncu, "--set", "full", "--csv", "--page", "raw", "--clock-control", "none"]
    filt = ["--kernel-name", f"regex:^{kname}$", "--launch-skip", "1", "--launch-count", "1"]
    prog = [sys.executable, str(Path(__file__).resolve()), "--launch", name, "--reps", "3"]
    tries = [[*base, "--metrics", ",".join(extras), *filt, *prog]] if extras else []
    tries.append(base + filt + prog)
    for argv in tries:
        t0 = time.time()
        left = BUDGET_S - (t0 - T0) - 15
        if left < 20:
            raise RuntimeError(f"skipped: {left:.0f} s of the run's budget left")
        p = subprocess.run(argv, capture_output=True, text=True, timeout=min(NCU_S, left), check=False)
        row["ncu_s"] = round(time.time() - t0, 1)
        if p.returncode == 0 and "smsp__inst_executed.sum" in p.stdout:
            raw.write_text(p.stdout)
            row.update(ncu_csv=str(raw), ncu_extras=bool(extras) and "--metrics" in argv)
            return
        row.setdefault("ncu_errors", []).append(f"rc={p.returncode}: {(p.stderr or p.stdout)[-600:]}")
    raise RuntimeError(f"ncu gave no raw page for {kname}")


def step_floors(row: dict[str, Any], gpu: str) -> None:
    from kernelpilot.roofline.core import analyze
    from kernelpilot.roofline.models import RooflineRequest

    args: dict[str, Any] = dict(row["roofline_op"], gpu=gpu, isa=row["cubin"], grid=row["grid"])
    args.update(block=row["block"], isa_kernel=f"^{row['kernel']}$")
    if row.get("ncu_csv"):
        args.update(ncu_csv=row["ncu_csv"], ncu_kernel=f"^{row['kernel']}$")
    if row.get("cold_us"):
        args["measured_time_us"] = row["cold_us"]
    r = analyze(RooflineRequest.model_validate(args))
    floors = {f.source: f for f in r.issue}
    st, me = floors.get("static"), floors.get("measured")
    row.update(
        bound=r.bound,
        memory_floor_us=r.memory_time_us,
        floor_us=r.time_floor_us,
        stop_target_us=r.stop.target_time_us,
        stop_bound=r.stop.bound,
        stop_status=r.stop.status,
        below_floor=r.below_floor.message if r.below_floor else None,
        static=st.model_dump() if st else None,
        measured=me.model_dump() if me else None,
        static_over_measured=st.time_us / me.time_us if st and me and me.time_us else None,
        issue_total_static_over_ncu=(st.pipes and me and _ratio(st, me, "issue")) or None,
        warm_under_issue_floor=bool(row.get("warm_us") and (r.issue_time_us or 0) > row["warm_us"]),
        roofline_text=r.render_text().split("spec vs measured")[0],
    )


def _ratio(a: Any, b: Any, pipe: str) -> float | None:
    pa = next((p for p in a.pipes if p.pipe == pipe), None)
    pb = next((p for p in b.pipes if p.pipe == pipe), None)
    return pa.warp_instructions / pb.warp_instructions if pa and pb and pb.warp_instructions else None


def _env() -> dict[str, Any]:
    import torch
    import triton

    env: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": sys.version.split()[0],
    }
    try:
        q = "name,driver_version,clocks.sm,clocks.max.sm"
        smi = subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        env["nvidia_smi"] = smi.stdout.strip()
        v = subprocess.run(["ncu", "--version"], capture_output=True, text=True, timeout=20)
        env["ncu"] = v.stdout.strip().splitlines()[-1] if v.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired) as exc:
        env["env_error"] = str(exc)
    return env


def _step(row: dict[str, Any], what: str, fn: Any, *args: Any) -> Any:
    t0 = time.time()
    try:
        got = fn(*args)
        print(f"  {what}: ok ({time.time() - t0:.1f} s)", flush=True)
        return got
    except Exception as exc:  # one failing step keeps the others: the row names it with its traceback tail
        row.setdefault("errors", []).append(f"{what}: {type(exc).__name__}: {exc}")
        row.setdefault("tracebacks", []).append(traceback.format_exc()[-1500:])
        print(f"  {what}: FAILED {type(exc).__name__}: {exc}", flush=True)
        return None


def _yes(v: Any) -> str:
    return "-" if v is None else ("yes" if v else "NO")


def _f(v: Any, fmt: str = ".2f") -> str:
    return "-" if v is None else format(v, fmt)


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'kernel':20s} {'ok':>3s} {'cold':>8s} {'warm':>8s} {'mem fl':>7s} {'static fl':>15s} "
        f"{'ncu fl':>15s} {'st/ncu':>6s} {'issue st/ncu':>12s} {'bound':>6s} {'target':>8s} "
        f"{'status':>10s} under?"
    )
    out = ["== issue floors (µs; static = cubin x grid, ncu = measured counters)", head]
    for r in rows:
        st, me = r.get("static") or {}, r.get("measured") or {}
        out.append(
            f"{r['name']:20s} {_yes(r.get('correct')):>3s} {_f(r.get('cold_us')):>8s} "
            f"{_f(r.get('warm_us')):>8s} {_f(r.get('memory_floor_us')):>7s} "
            f"{_f(st.get('time_us')):>8s} {st.get('binding', '-'):>6s} {_f(me.get('time_us')):>8s} "
            f"{me.get('binding', '-'):>6s} {_f(r.get('static_over_measured')):>6s} "
            f"{_f(r.get('issue_total_static_over_ncu'), '.3f'):>12s} {r.get('bound', '-'):>6s} "
            f"{_f(r.get('stop_target_us')):>8s} {r.get('stop_status', '-'):>10s} "
            f"{'YES' if r.get('below_floor') or r.get('warm_under_issue_floor') else 'no'}"
        )
        for e in r.get("errors", []):
            out.append(f"    error: {e[:300]}")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("issue_bound_out"))
    ap.add_argument("--only", default="", help="comma-separated kernels: gating,row_lse,row_sort,rope")
    ap.add_argument("--launch", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.launch:
        launch_main(a.launch, a.reps)
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device", flush=True)
        return 2
    env = _env()
    print(json.dumps(env), flush=True)
    cap = tuple(torch.cuda.get_device_capability())
    chip = {(9, 0): "gh100", (8, 0): "ga100"}.get(cap)  # type: ignore[call-overload]
    ncu = shutil.which("ncu")
    extras = known_extras(ncu, chip) if ncu else []
    print(f"per-pipe counters added to the full set: {len(extras)} ({chip})", flush=True)
    names = [n for n in (a.only.split(",") if a.only else list(_kernels().SPECS)) if n]
    rows: list[dict[str, Any]] = []
    for name in names:
        row: dict[str, Any] = {"name": name}
        rows.append(row)
        print(f"== {name}", flush=True)
        spec = _step(row, "build+check", step_build, name, a.out, row)
        _step(row, "kernelpilot time", step_time, name, row)
        if spec is not None:
            _step(row, "ncu", step_ncu, name, spec.name, a.out, extras, row)
            _step(row, "floors", step_floors, row, env["device"])
        if row.get("roofline_text"):
            print(row["roofline_text"], flush=True)
        (a.out / "issue_bound.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1, default=str))
    print(table(rows), flush=True)
    ratios = [r["static_over_measured"] for r in rows if r.get("static_over_measured")]
    spread = f"{min(ratios):.3f}..{max(ratios):.3f}" if ratios else "none"
    worst = max((abs(x - 1) for x in ratios), default=float("nan"))
    print(f"issue_floor_static_vs_ncu_worst={worst * 100:.1f} % (of {len(ratios)} kernels, spread {spread})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
