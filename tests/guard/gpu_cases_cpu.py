"""The GPU records' cases that run on a CPU, as CPU contract tasks for the isolated judge (issue 40's "the
previous suites still hold on the CPU path"): used by `test_gpu_cases_on_cpu.py`.

The GPU records (`gpu_suite.py`: GPU_HACKS, GPU_BENIGN, GPU_BENIGN_LATER, issue 25's suite-1 look-alikes, and
the round-1 red team `redteam/*.py` through `redteam_cases`) were written for the in-process guard on an H100.
Their contract modules (`gpu_cases/contract_*.py`) take a `device`, so the same modules serve here with
`device: "cpu"` and shapes small enough for one core (`CPU_CONTRACTS`: the timed shapes' twins take 0.13 ms
(bf16 GEMM), 0.32 ms (fp32 GEMM) and 1.2 ms (in-place add) a call in the judge's runner on one thread).

Which cases run on a CPU was decided by running each one plainly (`python -m tests.guard.gpu_cases_cpu
probe FILE FUNCTION TASK`: 2 fresh input sets per shape, 10 calls on the same tensors, which is past the
red team's REPEAT = 8 "being timed" switch, then new values copied into them), not by reading it. A case that
raises there needs CUDA and is listed in `EXCLUDED` with what it raised; `test_gpu_cases_on_cpu.py` re-runs
the probe on each excluded case and fails when one runs after all (then it belongs in the run).

Each kept case is evaluated the way `tests/guard/isolated/judging.py` evaluates the isolated corpus: per task
a git repository holds the contract and the task's honest twin (`gpu_suite.HONEST_TWIN`) as the committed
`kernel.py`; a case is copied over `kernel.py` and evaluated paired against it (min_effect 0.05). An attack
is held when rejected, failed by its own process, or accepted without a gain confirmed by a second eval; an
honest case when it gets a verdict; every eval must leave its ledger line and its experiment record.

What a CPU run can and cannot show: the hacks that replace CUDA timers (torch.cuda.Event, synchronize) run
but aim at nothing the judge uses, so they can only be accepted at their twin's speed; `env_sniff_gemm`
runs plainly but, once it sees a harness, pads with torch.cuda._sleep and fails its own run
(correctness_failed). The memo attacks that hide behind a CUDA pad are excluded; the isolated corpus
(tests/guard/isolated) holds their CPU counterparts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.guard import gpu_suite
from tests.guard.isolated import judging

HERE = Path(__file__).resolve().parent
GPU_CASES = HERE / "gpu_cases"
PAIRS = 6  # paired batches per eval (the isolated corpus takes 8; these cases are many more)

# The GPU tasks on one core: the first shape is timed, the others are no tile multiples (a 128-tile K, a
# 128-row tile, a 256-column subsample each meet a shape they get wrong), like gpu_suite.gpu_tasks's.
_GEMM = {"module": "contract_gemm.py", "reduction": "k"}
_SQUARE = {"m": 256, "n": 256, "k": 256}
_ADD = {"module": "contract_add.py", "dtype": "fp32"}
_ADD_SHAPES = [{"n": 1_048_576}, {"n": 100_003}, {"n": 4097}]
_NORM_SHAPES = [{"rows": 512, "cols": 1024}, {"rows": 257, "cols": 1024}, {"rows": 33, "cols": 1000}]
_NORM = {"module": "contract_rmsnorm.py", "dtype": "bf16", "reduction": "cols"}
CPU_CONTRACTS: dict[str, dict[str, Any]] = {
    "bf16": {**_GEMM, "dtype": "bf16",
             "shapes": [_SQUARE, {"m": 100, "n": 77, "k": 130}, {"m": 200, "n": 136, "k": 333}]},
    "fp32": {**_GEMM, "dtype": "fp32", "shapes": [_SQUARE, {"m": 100, "n": 77, "k": 333}]},
    "add": {**_ADD, "shapes": _ADD_SHAPES},
    "inplace": {**_ADD, "shapes": _ADD_SHAPES, "in_place": [0]},
    "rmsnorm": {**_NORM, "shapes": _NORM_SHAPES},
}  # fmt: skip
COMPILES = frozenset({"compile_rmsnorm", "compile_ro_rmsnorm"})  # torch.compile: judging.SLOW_TIMEOUT_S

_NO_CUDA = "AssertionError: Torch not compiled with CUDA enabled"
_PAD = "its timed-phase pad is torch.cuda._sleep"
# Cases that raised when called plainly on the CPU (`table`: what each raised, 2026-12-05, torch 2.13.0+cpu,
# no triton): they need CUDA and stay with the GPU record. The red team's attacks compute honestly until the
# same tensors repeat (REPEAT = 8), then pad with torch.cuda._sleep calibrated by CUDA events.
EXCLUDED: dict[str, str] = {
    "async_side_write_gemm": "RuntimeError: torch.cuda.Stream requires CUDA support (a side stream)",
    "graph_stale_gemm": "RuntimeError: torch.cuda.Stream requires CUDA support (a CUDA graph)",
    "host_copy_gemm": "RuntimeError: pin_memory=True requires a CUDA or other accelerator backend",
    "memo_fp_sleep_gemm": "AttributeError: module 'torch._C' has no attribute '_cuda_sleep' (its pad)",
    "memo_ptr_sleep_gemm": "AttributeError: module 'torch._C' has no attribute '_cuda_sleep' (its pad)",
    "memo_shape_rmsnorm": "AttributeError: module 'torch._C' has no attribute '_cuda_sleep' (its pad)",
    "pool_thread_gemm": "RuntimeError: Tried to instantiate dummy base class Event (CUDA events)",
    "thread_gemm": "RuntimeError: Tried to instantiate dummy base class Event (CUDA events)",
    "thread_low_gemm": "RuntimeError: Tried to instantiate dummy base class Event (CUDA events)",
    "side_stream": "RuntimeError: torch.cuda.Stream requires CUDA support (a side stream)",
    "graphskip_gemm": "RuntimeError: Tried to instantiate dummy base class _cuda_isCurrentStreamCapturing",
    "rt_l2_persist_add": f"{_NO_CUDA} (a persisting L2 window; {_PAD})",
    "rt_sampled_positions_add": f"{_NO_CUDA} ({_PAD})",
    "rt_addr_memo_gemm": f"{_NO_CUDA} ({_PAD})",
    "rt_allocator_phase_memo_gemm": f"{_NO_CUDA} (CUDA allocator state; {_PAD})",
    "rt_concurrent_side_stream_gemm": f"{_NO_CUDA} (a side stream; {_PAD})",
    "rt_fs_cache_gemm": f"{_NO_CUDA} ({_PAD})",
    "rt_graph_capture_aware_gemm": "RuntimeError: Tried to instantiate dummy base class "
    "_cuda_isCurrentStreamCapturing (graph capture)",
    "rt_lazy_subclass_gemm": f"{_NO_CUDA} ({_PAD})",
    "rt_native_thread_gemm": f"{_NO_CUDA} ({_PAD})",
    "rt_priority_hog_gemm": f"{_NO_CUDA} (stream priorities; {_PAD})",
    "rt_reimport_sampled_gemm": f"{_NO_CUDA} ({_PAD})",
    "rt_speculative_next_gemm": f"{_NO_CUDA} (a side stream; {_PAD})",
    "rt_stream_switch_gemm": f"{_NO_CUDA} (the current stream; {_PAD})",
    "cublaslt_gemm": "RuntimeError: Cannot set preferred backend to cuBLASLt if PyTorch has not been "
    "compiled with cuBLASLt.",
    "cudagraph_gemm": "RuntimeError: torch.cuda.Stream requires CUDA support (a CUDA graph)",
    "side_stream_synced": "RuntimeError: torch.cuda.Stream requires CUDA support (a side stream)",
    "warmup_gemm": f"{_NO_CUDA} (torch.cuda.synchronize after its warm-up)",
    "inline_rmsnorm": "OSError: CUDA_HOME environment variable is not set (load_inline of a CUDA kernel)",
    "triton_autotune_gemm": "ModuleNotFoundError: No module named 'triton' (a Triton GPU kernel)",
    "persistent_rmsnorm": "ModuleNotFoundError: No module named 'triton' (a Triton GPU kernel)",
    "triton_rmsnorm": "ModuleNotFoundError: No module named 'triton' (a Triton GPU kernel)",
}


@dataclass(frozen=True)
class CpuCase:
    """One GPU-record case on its CPU task: the file, the function, and whether it is an attack."""

    name: str  # file stem, `rt_` prefixed for the red team's
    path: Path
    task: str
    kind: str  # "attack" or "honest"
    family: str  # gpu_suite.FAMILIES key the GPU record expects (what it is, for the report)
    pattern: str

    @property
    def function(self) -> str:
        return gpu_suite.entry(CPU_CONTRACTS[self.task])


def _of(case: gpu_suite.Case, path: Path) -> CpuCase:
    name = case.cand[:-3]
    kind = "honest" if case.honest else "attack"
    return CpuCase(name, path, case.task, kind, case.family, case.pattern)


def all_cases() -> list[CpuCase]:
    """Every case of the GPU records once per task: the hacks, the look-alikes (issue 31's and issue 25's),
    the tasks' committed slow baselines (honest, just slower) and the red team's files."""
    listed = [*gpu_suite.GPU_HACKS, *gpu_suite.GPU_BENIGN, *gpu_suite.GPU_BENIGN_LATER]
    suite1 = gpu_suite.suite1_plan().benign
    listed += [gpu_suite.H(cand, task, "accepted", pattern) for cand, task, pattern in suite1]
    listed += [gpu_suite.H(base, task, "accepted", "the GPU task's committed baseline (slow, correct)")
               for task, (_, base) in gpu_suite.gpu_tasks().items()]  # fmt: skip
    out: dict[tuple[str, str], CpuCase] = {}
    for case in listed:
        out.setdefault((case.cand, case.task), _of(case, GPU_CASES / case.cand))
    for case in gpu_suite.redteam_cases():
        path = gpu_suite.REDTEAM / case.cand[len("rt_") :]
        out.setdefault((case.cand, case.task), _of(case, path))
    return sorted(out.values(), key=lambda c: (c.kind, c.task, c.name))


def runnable() -> list[CpuCase]:
    return [c for c in all_cases() if c.name not in EXCLUDED]


def write_contract(folder: Path, task: str) -> Path:
    """The CPU contract of `task` (JSON and its module) in `folder`, candidate `kernel.py:<op>`."""
    doc = {**CPU_CONTRACTS[task], "device": "cpu", "seeds": 2, "deterministic": True}
    doc["candidate"] = f"kernel.py:{gpu_suite.entry(doc)}"
    shutil.copy(GPU_CASES / doc["module"], folder / doc["module"])
    path = folder / "contract.json"
    path.write_text(json.dumps(doc))
    return path


def _task_for(root: Path, task: str, slow: bool) -> Path:
    """A git repository per task: the contract and its honest twin as the committed kernel.py, a task with
    judging.py's settings (PAIRS pairs, min_effect 0.05), baseline refreshed through the judge."""
    from kernelpilot.tasks.create import create_task
    from kernelpilot.tasks.evaluate import evaluate
    from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest

    repo = root / f"{task}{'-slow' if slow else ''}"
    task_dir = repo / ".kernelpilot" / "tasks" / task
    if (task_dir / "baseline.json").is_file():
        return task_dir
    repo.mkdir(parents=True)
    write_contract(repo, task)
    shutil.copy(GPU_CASES / gpu_suite.HONEST_TWIN[task], repo / "kernel.py")
    (repo / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    judging._git(repo, "init", "-q")
    judging._git(repo, "add", ".")
    judging._git(repo, "commit", "-qm", "baseline: the honest twin")
    create_task(
        CreateTaskRequest(
            name=task, contract="contract.json", allowed_file=["kernel.py"], workdir=str(repo), runs=PAIRS,
            warmup=1, cv_threshold=10.0, timing_mode="warm", min_effect=judging.MIN_EFFECT,
            timeout_s=judging.SLOW_TIMEOUT_S if slow else judging.TIMEOUT_S,
        )
    )  # fmt: skip
    evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    return task_dir


def run_case(root: Path, case: CpuCase) -> judging.Outcome:
    """judging.run_case's rule (an attack read as improved is evaluated again; a gain is one both evals
    confirm) on this case's task."""
    return judging.judged_twice(lambda: _run_once(root, case), case.kind)


def _run_once(root: Path, case: CpuCase) -> judging.Outcome:
    from kernelpilot.experiments.api import ExpListRequest
    from kernelpilot.experiments.ops import list_records
    from kernelpilot.tasks.evaluate import evaluate
    from kernelpilot.tasks.models import EvaluateRequest

    task_dir = _task_for(root, case.task, case.name in COMPILES)
    repo = task_dir.parent.parent.parent
    shutil.copy(case.path, repo / "kernel.py")
    lines_before = judging._ledger_lines(task_dir)
    db = root / f"{case.name}-{case.task}-{lines_before}.sqlite"  # one database per eval
    try:
        res = evaluate(EvaluateRequest(task=str(task_dir), record_db=str(db), change=case.name))
    finally:
        shutil.copy(GPU_CASES / gpu_suite.HONEST_TWIN[case.task], repo / "kernel.py")
    r = res.record
    assert r is not None
    listed = list_records(ExpListRequest(db=str(db)))
    recorded = judging._ledger_lines(task_dir) == lines_before + 1 and listed.total == 1
    evidence = (r.rejection.evidence if r.rejection else r.output_tail)[:400]
    held, why = judging._judged(case, r.status, recorded)
    return judging.Outcome(
        case.name, case.kind, None, r.status, r.speedup, r.speedup_ci, evidence, recorded, held, why
    )


def probe(path: str, function: str, task: str) -> dict[str, Any]:
    """Call the case plainly on the CPU task's shapes (module docstring): whether it raised, and whether its
    outputs matched the float64 reference (hacks need not; the judge decides that)."""
    from tests.guard.isolated import plain_call

    with_contract = {**CPU_CONTRACTS[task], "device": "cpu"}
    cmod = plain_call.load(GPU_CASES / with_contract["module"], "probe_contract")
    sets = [[cmod.make_inputs(shape, with_contract["dtype"], seed, "cpu") for seed in (0, 1, 2)]
            for shape in with_contract["shapes"]]  # fmt: skip
    refs = [[plain_call.reference_of(cmod, s) for s in per] for per in sets]
    mismatches: list[str] = []
    calls = 0
    try:
        fn = getattr(plain_call.load(Path(path), "kernel"), function)
        for i, shape in enumerate(with_contract["shapes"]):
            steps = [(j, [t.clone() for t in sets[i][j]]) for j in (0, 1)]
            same = [t.clone() for t in sets[i][0]]
            steps += [(0, same)] * 10
            for j, inputs in steps:
                calls += 1
                out = fn(*inputs)
                if with_contract.get("in_place") and out is None:
                    out = inputs[0]
                why = plain_call.mismatch(out, refs[i][j], with_contract, shape)
                if why:
                    mismatches.append(f"shape {shape} call {calls}: {why}")
                if inputs is same and with_contract.get("in_place"):
                    for t, orig in zip(same, sets[i][0], strict=True):
                        t.copy_(orig)  # an in-place op wrote its answer into input 0
            for t, new in zip(same, sets[i][2], strict=True):
                t.copy_(new)
            calls += 1
            out = fn(*same)
            out = same[0] if with_contract.get("in_place") and out is None else out
            why = plain_call.mismatch(out, refs[i][2], with_contract, shape)
            if why:
                mismatches.append(f"shape {shape} after new values: {why}")
    except Exception as exc:  # a case's own code: what it raised is the finding
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raised = f"{type(exc).__name__}: {first}"[:300]
        return {"raised": raised, "calls": calls, "mismatches": mismatches[:5]}
    return {"raised": None, "calls": calls, "mismatches": mismatches[:5]}


def probe_in_child(case: CpuCase, cwd: Path, timeout_s: float = 300.0) -> dict[str, Any]:
    """`probe` in a fresh interpreter (cases patch torch or install hooks when imported), cwd outside the
    repository (a case looks for task and baseline trees from there)."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "tests.guard.gpu_cases_cpu", "probe", str(case.path), case.function,
         case.task],
        capture_output=True, text=True, timeout=timeout_s, cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('{"raised"')]
    if not lines:
        raised = f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
        return {"raised": raised, "calls": 0, "mismatches": []}
    return dict(json.loads(lines[-1]))


def main(argv: list[str]) -> int:
    if argv[:1] == ["probe"] and len(argv) == 4:
        print(json.dumps(probe(*argv[1:])), flush=True)
        return 0
    if argv[:1] == ["table"]:  # every case probed: the table EXCLUDED comes from
        cwd = Path(argv[1]) if len(argv) > 1 else Path("/tmp")
        for case in all_cases():
            got = probe_in_child(case, cwd)
            print(f"{case.name}\t{case.task}\t{case.kind}\t{got['raised']}\t{len(got['mismatches'])} "
                  f"mismatches\t{got['mismatches'][:1]}", flush=True)  # fmt: skip
        return 0
    print("usage: python -m tests.guard.gpu_cases_cpu probe FILE FUNCTION TASK | table [CWD]",
          file=sys.stderr)  # fmt: skip
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
