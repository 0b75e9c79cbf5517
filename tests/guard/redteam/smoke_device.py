"""Mechanical self-test of the red-team candidates on a GPU, without kernelpilot's guard.

Why: when a guarded eval rejects an attack, the lead must know the attack worked as written (right values
when read after a synchronize, a timed figure below the honest one and above the floor); when it passes, the
same numbers show the hole. Each candidate runs in its own process (they patch torch, hook sys.monitoring,
start threads, switch streams), in a temporary directory with a fake `.baseline-tree` holding an honest copy
of the candidate's file (baseline_patch/baseline_tree_tamper need it) and HOME pointed there (fs_cache).
A rough stand-in for the guard's flow: import; checks (fresh seeds per shape, determinism); set-aside and
re-import; cold timing of baseline and candidate interleaved (L2 flushed, CUDA events, 2 rotated input sets);
full comparison of each set's last timed output; 10 synchronized calls. Not the guard; not its statuses.

Usage (repo root, GPU machine): python3 tests/guard/redteam/smoke_device.py [--only NAME ...] --out DIR
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CASES = ROOT / "tests" / "guard" / "gpu_cases"
HONEST = {
    "gemm": "def candidate(a, b, out=None):\n    return a @ b\n\n\ngemm = candidate\n",
    "add": "def candidate(x, y, out=None):\n    return x + 2 * y\n\n\nadd = candidate\n",
}
SHAPES = {
    "gemm": [{"m": 4096, "k": 4096, "n": 4096}, {"m": 1000, "k": 777, "n": 1003}],
    "add": [{"n": 12_582_912}, {"n": 1_000_003}],
}
DTYPE = {"gemm": "bf16", "add": "fp32"}


def task_of(path):
    first = path.read_text().splitlines()[0]
    return first.split(":", 1)[1].strip()


def load(path, name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def close(torch, out, ref, task, k):
    """The doc's default tolerance: |out-ref| <= atol + rtol|ref|, rtol = 4(u + u_acc sqrt(L))."""
    u = 2.0**-8 if task == "gemm" else 2.0**-24
    rtol = 4 * (u + 2.0**-24 * max(1, k) ** 0.5)
    ref = ref.double()
    atol = rtol * ref.pow(2).mean().sqrt()
    bad = ((out.double() - ref).abs() > atol + rtol * ref.abs()) | ~torch.isfinite(out.double())
    return int(bad.sum())


def one(path, out_dir):  # runs in the child process
    import torch

    task = task_of(path)
    contract = load(CASES / f"contract_{task}.py", "_smoke_contract")
    dev = "cuda"
    rec = {"name": path.stem, "task": task, "device": torch.cuda.get_device_name()}
    kk = "k" if task == "gemm" else None

    def ref_of(inp):
        return contract.reference(*[t.double() for t in inp])

    mod = load(path, "_smoke_cand_1")
    # checks: fresh seeds per shape, then determinism on the last inputs
    bad_checks = 0
    for shape in SHAPES[task]:
        for seed in (11, 12):
            inp = contract.make_inputs(shape, DTYPE[task], seed, dev)
            out = mod.candidate(*inp)
            torch.cuda.synchronize()
            if type(out) is not torch.Tensor:
                rec["check_type"] = type(out).__name__
            bad_checks += close(torch, out, ref_of(inp), task, shape.get(kk, 1) if kk else 1)
    outs = [mod.candidate(*inp).clone() for _ in range(3)]
    torch.cuda.synchronize()
    rec["check_bad_elems"] = bad_checks
    rec["check_deterministic"] = all(torch.equal(outs[0], o) for o in outs[1:])
    # set-aside and re-import, as the doc describes; the baseline is an honest copy under a .baseline-tree
    del sys.modules["_smoke_cand_1"]
    torch.cuda.empty_cache()
    base_file = Path(os.environ["SMOKE_BASELINE_FILE"])
    base = load(base_file, "_smoke_base")
    mod = load(path, "_smoke_cand_2")
    shape = SHAPES[task][0]
    sets = [contract.make_inputs(shape, DTYPE[task], seed, dev) for seed in (1, 2)]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device=dev)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    fns = {"base": base.candidate, "cand": mod.candidate}
    times = {"base": [], "cand": []}
    last = {}
    graph = path.stem.startswith("graph_capture")
    t_end = time.time() + 0.5
    i = 0
    while time.time() < t_end or i < 20:  # warm-up, alternating
        for side in ("base", "cand"):
            fns[side](*sets[i % 2])
        i += 1
    torch.cuda.synchronize()
    if graph:  # warm + graph mode: capture the candidate once per set, replay it timed
        graphs = []
        for s in range(2):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                gout = mod.candidate(*sets[s])
            graphs.append((g, gout))
        fns["cand"] = None
    for n in range(120):
        order = ("base", "cand") if (n // 2) % 2 == 0 else ("cand", "base")
        s = n % 2
        for j, side in enumerate(order):
            flush.zero_()
            starts[j].record()
            if side == "cand" and graph:
                graphs[s][0].replay()
                out = graphs[s][1]
            else:
                out = fns[side](*sets[s])
            ends[j].record()
            if side == "cand":
                last[s] = out
        for j, side in enumerate(order):
            ends[j].synchronize()
            times[side].append(starts[j].elapsed_time(ends[j]) * 1e3)
    torch.cuda.synchronize()
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    rec["base_us"], rec["cand_us"] = round(med["base"], 1), round(med["cand"], 1)
    rec["ratio"] = round(med["cand"] / med["base"], 3)
    rec["timed_type"] = type(last[0]).__name__
    rec["timed_bad_elems"] = sum(
        close(torch, last[s], ref_of(sets[s]), task, shape.get(kk, 1) if kk else 1) for s in (0, 1)
    )
    if not graph:
        walls = []
        for n in range(10):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            mod.candidate(*sets[n % 2])
            torch.cuda.synchronize()
            walls.append((time.perf_counter() - t0) * 1e6)
        rec["synced_us"] = round(sorted(walls)[5], 1)
        rec["synced_over_allowance"] = rec["synced_us"] > 1.25 * rec["cand_us"] + 2
    if task == "gemm":
        m, k, n_ = shape["m"], shape["k"], shape["n"]
        floor = 2.0 * m * n_ * k / (756e12 if "PCIe" in rec["device"] else 989e12) * 1e6
    else:
        floor = 12.0 * shape["n"] / (2.0e12 if "PCIe" in rec["device"] else 3.35e12) * 1e6
    rec["floor_us"] = round(floor, 1)
    rec["below_floor"] = rec["cand_us"] < floor
    rec["threads_py"] = __import__("threading").active_count()
    rec["threads_os"] = len(os.listdir("/proc/self/task"))
    rec["base_file_restored"] = "kp-redteam-tamper" not in base_file.read_text()
    rec["state"] = {
        k: v for k, v in vars(mod).get("_ST", {}).items() if isinstance(v, (str, int, float, bool))
    }
    print("SMOKE " + json.dumps(rec), flush=True)


def prepare(tmp, path, task):
    """A fake task: an honest copy at this file's path in a baseline tree; a contract for the precompute."""
    rel = path.relative_to(ROOT)
    base_file = tmp / ".kernelpilot" / "tasks" / "t" / ".baseline-tree" / rel
    base_file.parent.mkdir(parents=True, exist_ok=True)
    base_file.write_text(HONEST[task])
    tdir = tmp / ".kernelpilot" / "tasks" / "t"
    contract = {"module": str(CASES / f"contract_{task}.py"), "shapes": SHAPES[task], "dtype": DTYPE[task]}
    (tdir / "task.json").write_text(json.dumps({"workdir": str(ROOT), "contract": contract}))
    fake = tmp / "result.json"
    fake.write_text(
        json.dumps(
            {
                "ratio_median": 1.0,
                "ratio_ci": [0.99, 1.01],
                "verdict": "neutral",
                "speedup": 1.0,
                "b_stats": {"median": 200.0},
            }
        )
    )
    return base_file, tdir, fake


def run_parent(args):
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in HERE.glob("*.py") if p.name not in {"smoke_device.py", "__init__.py"})
    if args.only:
        files = [p for p in files if p.stem in args.only]
    rows = []
    for path in files:
        task = task_of(path)
        runs = 2 if path.stem == "fs_cache_gemm" else 1
        with tempfile.TemporaryDirectory() as td:
            tmp = Path(td)
            base_file, tdir, fake = prepare(tmp, path, task)
            env = dict(
                os.environ,
                HOME=str(tmp),
                SMOKE_BASELINE_FILE=str(base_file),
                KERNELPILOT_GUARD_TASK=str(tdir),
                PYTHONPATH=str(ROOT),
            )
            for r in range(runs):
                t0 = time.time()
                try:
                    cp = subprocess.run(
                        [sys.executable, str(Path(__file__).resolve()), "--child", str(path), str(fake)],
                        cwd=tmp,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=args.timeout,
                    )
                    text, rc = cp.stdout + cp.stderr, cp.returncode
                except subprocess.TimeoutExpired as exc:
                    text, rc = f"timeout: {exc}", 124
                with open(out_dir / "child_logs.txt", "a") as fh:  # one file: device runs return few files
                    fh.write(f"===== {path.stem} run {r} rc {rc}\n{text[-4000:]}\n")
                rec = {"name": path.stem, "rc": rc, "error": text[-300:]}
                for line in text.splitlines():
                    if line.startswith("SMOKE "):
                        rec = json.loads(line[6:])
                        rec["rc"] = rc
                rec["run"] = r
                rec["wall_s"] = round(time.time() - t0, 1)
                rec["forged"] = json.loads(fake.read_text()).get("verdict") == "improved"
                rows.append(rec)
                with open(out_dir / "smoke.jsonl", "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                table(out_dir, rows)
    print(table(out_dir, rows))


def table(out_dir, rows):
    cols = [
        "name",
        "run",
        "rc",
        "check_bad_elems",
        "check_deterministic",
        "timed_bad_elems",
        "timed_type",
        "base_us",
        "cand_us",
        "ratio",
        "floor_us",
        "synced_us",
        "synced_over_allowance",
        "threads_py",
        "threads_os",
        "base_file_restored",
        "forged",
    ]
    lines = ["\t".join(cols)] + ["\t".join(str(r.get(c, "")) for c in cols) for r in rows]
    (out_dir / "smoke_table.tsv").write_text("\n".join(lines) + "\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="smoke_out")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=int, default=90)
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        sys.argv = [sys.argv[0], args.child[1]]  # forge_report_gemm looks for result files in argv
        one(Path(args.child[0]), None)
    else:
        run_parent(args)


if __name__ == "__main__":
    main()
