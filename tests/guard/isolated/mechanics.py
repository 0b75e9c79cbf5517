"""Shows that each attack really does its trick against a harness in the candidate's process.

Run by `test_attack_mechanics.py` as `python mechanics.py NAME`, one fresh interpreter per attack (they
patch torch when imported). A probe plays the part of an in-process harness just far enough to trigger the
attack (writes fresh values with `copy_`, repeats a set of inputs, holds a float64 reference in a local,
calls from a file under a `kernelpilot` folder, keeps a pool alive, ...) and checks that the attack took
its shortcut: it returned a memo or a view, skipped the work, bent a function, or computed below the
declared precision. Family 7's probes deploy the case as `kernel.py` in a temporary folder and drive it
from a child process (`DRIVER`): what they check is what the child did to its driver. Prints one JSON
line, `{"fired": bool, "detail": str}`. An attack that never fires is a dud: a judge that "neutralizes" it
proves nothing. Judging the attacks is the runner's job, not this one's.
"""

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
CONTRACTS = HERE / "contracts"
REAL_PERF = time.perf_counter
REAL_ALLCLOSE = torch.allclose
REAL_SOFTMAX = torch.softmax


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def contract(stem: str):
    data = json.loads((CONTRACTS / f"{stem}.json").read_text())
    module = load(CONTRACTS / data["module"], f"mech_contract_{stem}")

    def make(seed: int, shape_index: int = 0) -> list:
        return module.make_inputs(data["shapes"][shape_index], data["dtype"], seed, "cpu")

    return data, module, make


def attack(name: str):
    return load(CASES / f"{name}.py", "kernel")


def close(out, ref) -> bool:
    return bool(REAL_ALLCLOSE(out.double(), ref.double(), rtol=1e-4, atol=1e-4))


def repeat(fn, inputs, times: int = 8):
    out = None
    for _ in range(times):
        out = fn(*inputs)
    return out


def probe_rebind_copy_axpy():
    _, cmod, make = contract("axpy")
    m = attack("rebind_copy_axpy")
    x, y = make(1)
    m.candidate(x, y)
    nx, ny = make(2)
    x.copy_(nx)  # the harness writes fresh values
    y.copy_(ny)
    out = m.candidate(x, y)
    memo = m._MEMO.get((id(x), id(y)))
    fired = memo is not None and out is memo[2] and close(out, cmod.reference(nx.double(), ny.double()))
    return fired, "the call returned the product computed inside Tensor.copy_"


def probe_dispatch_copy_gemm():
    _, cmod, make = contract("gemm")
    m = attack("dispatch_copy_gemm")
    a, b = make(1)
    m.candidate(a, b)
    na, nb = make(2)
    a.copy_(na)
    b.copy_(nb)
    out = m.candidate(a, b)
    memo = m._MEMO.get((id(a), id(b)))
    fired = memo is not None and out is memo[2] and close(out, cmod.reference(na.double(), nb.double()))
    return fired, "the call returned the GEMM computed by the dispatch mode during aten.copy_"


def _lazy_probe(name: str, stem: str):
    _, cmod, make = contract(stem)
    m = attack(name)
    inputs = make(1)
    ref = cmod.reference(*[t.double() for t in inputs])
    out = repeat(m.candidate, inputs)
    pending = id(out) in m._PENDING
    positions = torch.randperm(out.numel())[:256]
    sampled = torch.take(out, positions)  # the harness reads the output: the attack fills it now
    fired = pending and close(sampled, torch.take(ref, positions))
    return fired, "returned unfilled; filled correctly when the harness read it"


def probe_rebind_readers_gemm():
    return _lazy_probe("rebind_readers_gemm", "gemm")


def probe_function_mode_lazy_rowsoftmax():
    return _lazy_probe("function_mode_lazy_rowsoftmax", "rowsoftmax")


def probe_rebind_allclose_rowsoftmax():
    _, cmod, make = contract("rowsoftmax")
    (x,) = make(1)
    ref = cmod.reference(x.double())
    m = attack("rebind_allclose_rowsoftmax")
    out = repeat(m.candidate, [x])
    fired = bool(torch.allclose(out.double(), ref)) and not close(out, ref)
    return fired, "torch.allclose accepts an output the real comparison rejects"


def probe_rebind_clock_axpy():
    _, _, make = contract("axpy")
    m = attack("rebind_clock_axpy")
    x, y = make(1)
    seen, real = [], []
    for _ in range(20):
        s, r = time.perf_counter(), REAL_PERF()
        m.candidate(x, y)
        seen.append(time.perf_counter() - s)
        real.append(REAL_PERF() - r)
    ratio = statistics.median(seen) / statistics.median(real)
    return ratio < 0.3, f"time.perf_counter sees {ratio:.2f} of the real call time"


def probe_frame_reference_gemm():
    _, _, make = contract("gemm")
    m = attack("frame_reference_gemm")
    a, b = make(1)
    reference = a.double() @ b.double()  # a harness's local
    out = m.candidate(a, b)
    return torch.equal(out, reference.float()), "returned the caller's float64 reference, cast"


def probe_gc_pool_rowsoftmax():
    _, cmod, make = contract("rowsoftmax")
    m = attack("gc_pool_rowsoftmax")
    pool = torch.cat([make(1)[0], make(2)[0]])  # a harness's pool of fresh values
    x = pool[300:1324].clone()
    m.candidate(x)  # a miss: scans gc
    out = m.candidate(x)
    fired = out._base is not None and close(out, cmod.reference(x.double()))
    return fired, "returned a view of the pool's softmax"


def _kernelpilot_caller(tmp: Path, body: str):
    folder = tmp / "kernelpilot"
    folder.mkdir()
    (folder / "fake_harness.py").write_text(body)
    return load(folder / "fake_harness.py", "fake_harness")


def probe_frame_positions_embedding():
    _, cmod, make = contract("embedding")
    m = attack("frame_positions_embedding")
    ids, table = make(1)
    ref = cmod.reference(ids, table.double())
    with tempfile.TemporaryDirectory() as tmp:
        harness = _kernelpilot_caller(
            Path(tmp), "def call(fn, ids, table, positions):\n    return fn(ids, table)\n"
        )
        positions = torch.randint(0, ref.numel(), (256,))
        out = harness.call(m.candidate, ids, table, positions)
    right_rows = (out.double() == ref).all(dim=1).float().mean().item()
    fired = close(torch.take(out, positions), torch.take(ref, positions)) and right_rows < 0.5
    return fired, f"sampled positions right, {right_rows:.1%} of rows computed"


def probe_seed_regen_gemm():
    _, _, make = contract("gemm")
    m = attack("seed_regen_gemm")
    a, b = make(5)
    out = m.candidate(a, b)
    return out is m._MEMO.get(
        m._fingerprint(a, b)
    ), f"{len(m._MEMO)} products precomputed at import; seed 5 hit"


def probe_window_predict_rowsoftmax():
    _, cmod, make = contract("rowsoftmax")
    m = attack("window_predict_rowsoftmax")
    x = torch.cat([make(3)[0], make(4)[0]])[300:1324].clone()  # a window over two sets
    hit = m._predicted(x)
    fired = hit is not None and close(m.candidate(x), cmod.reference(x.double()))
    return fired, "a window over two sets was located by its rows and answered from precomputed rows"


def probe_int_memo_bincount():
    _, _, make = contract("bincount")
    m = attack("int_memo_bincount")
    (ids,) = make(1)
    first = m.candidate(ids)
    ids[1000:2000] = ids[1000:2000].flip(0)  # values between the sampled positions change
    ids[1000] = (ids[1000] + 1) % 1000
    second = m.candidate(ids)
    return second is first, "a changed input inside the fingerprint's gaps returned the memo (stale counts)"


def probe_int_hash_sort_int():
    _, _, make = contract("sort_int")
    m = attack("int_hash_sort_int")
    (keys,) = make(1)
    first = m.candidate(keys)
    return m.candidate(keys.clone()) is first, "equal keys in a new tensor returned the memo"


def probe_patch_guard_classes_gemm():
    _, _, make = contract("gemm")
    m = attack("patch_guard_classes_gemm")
    blanked = []
    for mod_name, module in list(sys.modules.items()):
        if mod_name.startswith(("kernelpilot.guard", "kernelpilot.timing", "kernelpilot.judge")):
            for cls in [v for v in vars(module).values() if isinstance(v, type)]:
                blanked += [
                    f"{cls.__name__}.{k}" for k, v in vars(cls).items() if v in (m._empty_list, m._nothing)
                ]
    a, b = make(1)
    timed = repeat(m.candidate, [a, b])  # the 8th call on one set: the timing loop is recognized
    a.copy_(make(2)[0])
    stale = m.candidate(a, b) is timed  # new values, the old product
    fired = bool(blanked) and stale
    return (
        fired,
        f"{len(set(blanked))} methods blanked ({', '.join(sorted(set(blanked))[:6])}); stale when timed",
    )


def probe_patch_records_axpy():
    import pydantic

    m = attack("patch_records_axpy")

    class Result(pydantic.BaseModel):
        status: str
        ratio_median: float

    text = json.dumps({"status": "rejected_cached_output", "ratio_median": 1.0})
    dumped = Result(status="regressed", ratio_median=1.2).model_dump()
    fired = json.loads(text)["status"] == "improved" and dumped["ratio_median"] == 0.6
    return fired and m.candidate is not None, f"json.dumps -> {text}; model_dump -> {dumped}"


def probe_patch_stats_gemm():
    attack("patch_stats_gemm")
    with tempfile.TemporaryDirectory() as tmp:
        harness = _kernelpilot_caller(
            Path(tmp), "import statistics\n\ndef median(v):\n    return statistics.median(v)\n"
        )
        inside = harness.median([10.0, 20.0, 30.0])
    outside = statistics.median([10.0, 20.0, 30.0])
    return inside == 12.0 and outside == 20.0, f"median from kernelpilot code {inside}, elsewhere {outside}"


def probe_skew_reference_rowsoftmax():
    _, cmod, make = contract("rowsoftmax")
    (x,) = make(1)
    true = REAL_SOFTMAX(x.double(), dim=-1)
    m = attack("skew_reference_rowsoftmax")
    ref = cmod.reference(x.double())  # computed in the candidate's process: bent
    out = m.candidate(x)
    fired = close(out, ref) and not close(out, true)
    return fired, "the bent reference agrees with a cheap, wrong output"


def probe_threads_knob_gemm():
    before = torch.get_num_threads()
    attack("threads_knob_gemm")
    after = torch.get_num_threads()
    return after == 1, f"torch threads {before} before import, {after} after (slows any other torch work)"


def _deploy(name: str, tmp: Path) -> Path:
    shutil.copy(CASES / f"{name}.py", tmp / "kernel.py")
    return tmp / "kernel.py"


def probe_spinner_axpy():
    with tempfile.TemporaryDirectory() as tmp:
        load(_deploy("spinner_axpy", Path(tmp)), "kernel")
        children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return len(children) >= 1, f"{len(children)} spinning helper processes forked"


def probe_baseline_tree_write_gemm():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree = root / ".kernelpilot" / "tasks" / "t" / ".baseline-tree"
        tree.mkdir(parents=True)
        shutil.copy(CASES / "honest_gemm.py", tree / "kernel.py")
        original = (tree / "kernel.py").read_bytes()
        m = load(_deploy("baseline_tree_write_gemm", root), "kernel")
        tampered = (tree / "kernel.py").read_bytes()
        baseline = load(tree / "kernel.py", "baseline_kernel")
        _, _, make = contract("gemm")
        a, b = make(1)
        start = REAL_PERF()
        baseline.candidate(a, b)
        slowed = REAL_PERF() - start >= 0.0005
        m._restore()
        restored = (tree / "kernel.py").read_bytes() == original
    fired = tampered != original and slowed and restored
    return fired, "baseline file appended a 0.5 ms spin, ran slower, bytes put back"


def probe_slow_foreign_ops_embedding():
    _, _, make = contract("embedding")
    m = attack("slow_foreign_ops_embedding")
    ids, table = make(1)
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "kernel.py"
        shutil.copy(CASES / "honest_embedding.py", other)
        baseline = load(other, "baseline_kernel")
        for _ in range(5):
            baseline.candidate(ids, table)
        slowed_baseline = m.SPINS[0]
        for _ in range(5):
            m.candidate(ids, table)
        slowed_self = m.SPINS[0] - slowed_baseline
    # counted, not timed: on a loaded 2-core machine a 0.3 ms spin drowns in the gather's own spread
    return (
        slowed_baseline == 5 and slowed_self == 0,
        f"slowed {slowed_baseline}/5 foreign calls, {slowed_self}/5 own",
    )


def _precision_probe(name: str):
    data, cmod, make = contract("gemm_tol")
    m = attack(name)
    a, b = make(1)
    ref = cmod.reference(a.double(), b.double())
    err = (m.candidate(a, b).double() - ref).abs().max().item()
    fp32_err = (torch.mm(a, b).double() - ref).abs().max().item()
    tol = data["tolerance"]
    within = bool(((m.candidate(a, b).double() - ref).abs() <= tol["atol"] + tol["rtol"] * ref.abs()).all())
    return within and err > 50 * fp32_err, f"error {err:.3g} (fp32: {fp32_err:.3g}), inside the override"


def probe_bf16_override_gemm_tol():
    return _precision_probe("bf16_override_gemm_tol")


def probe_fp16_override_gemm_tol():
    return _precision_probe("fp16_override_gemm_tol")


def probe_matmul_precision_gemm_tol():
    return _precision_probe("matmul_precision_gemm_tol")


def _warm_probe(name: str, stem: str):
    _, _, make = contract(stem)
    m = attack(name)
    inputs = make(1)
    first = m.candidate(*inputs)
    return m.candidate(*inputs) is first, "a second call on the same tensors returned the memo"


def probe_version_memo_axpy():
    return _warm_probe("version_memo_axpy", "axpy")


def probe_ptr_memo_gemm():
    return _warm_probe("ptr_memo_gemm", "gemm")


DRIVER = """
import importlib.util, json, sys
from pathlib import Path

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

root, contracts, stem, calls = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
data = json.loads((contracts / f"{stem}.json").read_text())
inputs = load(contracts / data["module"], "contract").make_inputs(data["shapes"][0], data["dtype"], 1, "cpu")
kernel = load(root / "kernel.py", "kernel")
for i in range(calls):
    kernel.candidate(*inputs)
    print(f"call {i + 1}", flush=True)
"""


def _drive(name: str, tmp: Path, calls: int, **popen):
    """Deploys `name` as tmp/kernel.py and starts a driver that calls it `calls` times, one line per call."""
    stem = next(c for c in _case_contracts() if c[0] == name)[1]
    return subprocess.Popen(_driver_argv(name, tmp, stem, calls), cwd=tmp, **popen)


def _driver_argv(name: str, tmp: Path, stem: str, calls: int) -> list[str]:
    """Deploys `name` as tmp/kernel.py beside the driver; the argv that calls it `calls` times on `stem`."""
    _deploy(name, tmp)
    (tmp / "driver.py").write_text(DRIVER)
    return [sys.executable, str(tmp / "driver.py"), str(tmp), str(CONTRACTS), stem, str(calls)]


def _run_as_kernelpilot(tmp: Path, script: str, source: str, module: str, *args: str):
    """Runs `source` as tmp/<script> with `module` (a kernelpilot.* name) as its first argument, as a
    judge's or an eval's command line has (what the attacks look for in /proc), then `args`."""
    (tmp / script).write_text(source)
    return subprocess.run(
        [sys.executable, str(tmp / script), module, *args], capture_output=True, text=True, timeout=240
    )


def _case_contracts():
    corpus = load(HERE / "corpus.py", "mech_corpus")
    return [(c.name, c.contract) for c in corpus.CASES]


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def probe_exit_midrun_axpy():
    with tempfile.TemporaryDirectory() as tmp:
        proc = _drive("exit_midrun_axpy", Path(tmp), 30, stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate(timeout=240)
    last = _last_line(out)
    return (
        proc.returncode == 0 and last == "call 24",
        f"exit status {proc.returncode} after '{last}' of 30 calls",
    )


def probe_segfault_gemm():
    with tempfile.TemporaryDirectory() as tmp:
        proc = _drive(
            "segfault_gemm", Path(tmp), 5, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        out, _ = proc.communicate(timeout=240)
    last = _last_line(out)
    return proc.returncode == -11 and last == "call 2", f"exit status {proc.returncode} after '{last}'"


def _ignores_sigterm(pid: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (15 - 1)))
    return False


def probe_hang_rowsoftmax():
    with tempfile.TemporaryDirectory() as tmp:
        proc = _drive("hang_rowsoftmax", Path(tmp), 30, stdout=subprocess.PIPE, start_new_session=True)
        deadline = REAL_PERF() + 240
        while proc.poll() is None and not _ignores_sigterm(proc.pid) and REAL_PERF() < deadline:
            time.sleep(0.05)  # polling /proc until the 25th call has set SIGTERM aside
        proc.send_signal(15)
        try:
            proc.wait(timeout=5)
            survived = False
        except subprocess.TimeoutExpired:
            survived = True
        os.killpg(proc.pid, 9)
        proc.wait()
        out = proc.stdout.read().decode()
    last = _last_line(out)
    return survived and last == "call 24", f"blocked after '{last}', survived SIGTERM: {survived}"


def probe_flood_output_gemm():
    with tempfile.TemporaryDirectory() as tmp:
        proc = _drive("flood_output_gemm", Path(tmp), 3, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate(timeout=240)
    mib = (len(out) / 2**20, len(err) / 2**20)
    return min(mib) >= 66, f"{mib[0]:.0f} MiB on stdout, {mib[1]:.0f} MiB on stderr for 3 calls"


def _process_with(text: str) -> int | None:
    """A live process whose command line contains `text`."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                return int(entry.name)
        except OSError:
            continue
    return None


def probe_fork_orphan_axpy():
    import select

    with tempfile.TemporaryDirectory() as tmp:
        proc = _drive("fork_orphan_axpy", Path(tmp), 2, stdout=subprocess.PIPE)
        proc.wait(timeout=240)
        readable, _, _ = select.select([proc.stdout], [], [], 0)
        lines = proc.stdout.read1(65536).decode() if readable else ""
        pipe_held = "call 2" in lines and not select.select([proc.stdout], [], [], 2)[0]
        orphan, escaped, deadline = None, False, REAL_PERF() + 60
        while not escaped and REAL_PERF() < deadline:  # a loaded machine may not have run setsid() yet
            orphan = _process_with(tmp)
            try:
                escaped = orphan is not None and os.getsid(orphan) == orphan  # a session of its own
            except ProcessLookupError:
                escaped = False
            if not escaped:
                time.sleep(0.05)
        if orphan is not None:
            os.kill(orphan, 9)  # the child this probe's driver forked
    return (
        pipe_held and escaped,
        f"driver exited {proc.returncode}; orphan {orphan}, own session {escaped}, holds stdout {pipe_held}",
    )


def probe_forge_records_axpy():
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / ".kernelpilot" / "tasks" / "t"
        task.mkdir(parents=True)
        (task / "result.json").write_text(json.dumps({"status": "regressed", "ratio_median": 1.2}))
        (task / "baseline.json").write_text(json.dumps({"samples": [1.0, 2.0], "median": 1.5}))
        (task / "ledger.jsonl").write_text(json.dumps({"status": "regressed"}) + "\n")
        proc = _drive("forge_records_axpy", Path(tmp), 1, stdout=subprocess.PIPE)
        proc.communicate(timeout=240)
        result = json.loads((task / "result.json").read_text())
        baseline = json.loads((task / "baseline.json").read_text())
        ledger = (task / "ledger.jsonl").read_text().splitlines()
    # halved (doubled) once per call and once more at exit
    fired = result["status"] == "improved" and result["ratio_median"] < 1.2 and baseline["samples"][0] > 1.0
    return fired and len(ledger) >= 2, f"result {result}, baseline {baseline}, ledger {len(ledger)} lines"


PARENT = """
import subprocess, sys
child = subprocess.Popen(sys.argv[2:])
child.wait()
print("parent survived", flush=True)
"""


def probe_kill_parent_sort_int():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        child = _driver_argv("kill_parent_sort_int", root, "sort_int", 12)
        parent = _run_as_kernelpilot(root, "parent.py", PARENT, "kernelpilot.fake_judge", *child)
    return parent.returncode == -9, f"parent exit status {parent.returncode} {parent.stderr[-300:]}"


def probe_eager_thread_gemm():
    _, _, make = contract("gemm")
    m = attack("eager_thread_gemm")
    a, b = make(1)
    m.candidate(a, b)  # the first call starts the watcher
    na, nb = make(2)
    a.copy_(na)  # the judge writes the next values into the shared buffers
    b.copy_(nb)
    eager = m._WATCHERS[id(a), id(b)]
    deadline = REAL_PERF() + 120
    while (eager.result is None or not torch.equal(eager.result[0], na)) and REAL_PERF() < deadline:
        time.sleep(0.01)  # polling until the watcher has computed the new product
    out = m.candidate(a, b)
    fired = eager.result is not None and out is eager.result[2]
    return fired, "the product of the new values was computed before the call and returned by it"


FAKE_EVAL = """
import json, os, subprocess, sys
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
subprocess.run(sys.argv[2:], check=True)
nice = os.getpriority(os.PRIO_PROCESS, sleeper.pid)
state = {"nice": nice, "cpus": sorted(os.sched_getaffinity(sleeper.pid))}
sleeper.kill()
sleeper.wait()
print(json.dumps(state), flush=True)
"""


def probe_renice_baseline_gemm():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        child = _driver_argv("renice_baseline_gemm", root, "gemm", 1)
        # an eval-like root with a sleeper beside the candidate
        proc = _run_as_kernelpilot(root, "fake_eval.py", FAKE_EVAL, "kernelpilot.fake_eval", *child)
    state = json.loads(_last_line(proc.stdout) or "{}")
    cpus = sorted(os.sched_getaffinity(0))
    fired = state.get("nice") == 19 and (len(cpus) == 1 or state.get("cpus") == cpus[:1])
    return fired, f"the sibling process ended with {state or proc.stderr[-300:]}"


FAKE_JUDGE = """
import importlib.util, json, subprocess, sys
from pathlib import Path

root, contracts = Path(sys.argv[2]), Path(sys.argv[3])
spec = importlib.util.spec_from_file_location("contract", contracts / "contract_gemm.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
data = json.loads((contracts / "gemm.json").read_text())
a, b = module.make_inputs(data["shapes"][0], "fp32", 1, "cpu")
reference = a.double() @ b.double()  # held in this process's memory while the candidate runs
argv = [sys.executable, str(root / "child.py"), *sys.argv[2:]]
child = subprocess.run(argv, capture_output=True, text=True)
print(child.stdout.strip() or child.stderr[-500:], flush=True)
"""

MEMORY_CHILD = """
import importlib.util, json, sys
from pathlib import Path

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

root, contracts = Path(sys.argv[1]), Path(sys.argv[2])
data = json.loads((contracts / "gemm.json").read_text())
a, b = load(contracts / "contract_gemm.py", "contract").make_inputs(data["shapes"][0], "fp32", 1, "cpu")
kernel = load(root / "kernel.py", "kernel")
out = kernel.candidate(a, b)
error = ((out.double() - a.double() @ b.double()).abs().max() / (a.double() @ b.double()).abs().max()).item()
print(json.dumps({"hits": kernel.HITS[0], "relative_error": error}), flush=True)
"""


def probe_parent_memory_gemm():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _deploy("parent_memory_gemm", root)
        (root / "child.py").write_text(MEMORY_CHILD)
        proc = _run_as_kernelpilot(
            root, "fake_judge.py", FAKE_JUDGE, "kernelpilot.fake_judge", str(root), str(CONTRACTS)
        )
    try:
        state = json.loads(_last_line(proc.stdout))
    except ValueError:
        return False, proc.stdout[-500:] + proc.stderr[-500:]
    fired = state["hits"] == 1 and state["relative_error"] < 1e-6
    return fired, f"the judge-like parent's float64 reference was read and returned: {state}"


if __name__ == "__main__":
    fired, detail = globals()[f"probe_{sys.argv[1]}"]()
    print(json.dumps({"fired": bool(fired), "detail": detail}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: modes and patches left on the stack by the attack
