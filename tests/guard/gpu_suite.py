"""The hack suite end to end through `kernelpilot eval` with a contract (issues 25 and 31's acceptance run).

Not a pytest module. `python tests/guard/gpu_suite.py OUT_DIR` needs an NVIDIA GPU with torch (driver:
tests/guard/gpu_run.sh); `--cpu` runs the same driver on the numpy cases of tests/guard/cases (no GPU: the
wiring, the statuses and the report, not the acceptance figures).

Builds a scratch git repository of the cases with one contract task per contract (each with its baseline
candidate committed), refreshes the baselines one at a time, then:
1. the hacks, `jobs` (8) evals in flight, each in its own clone (same commits, the task folder and
   baseline copied in): a rejection does not depend on a quiet GPU; then, alone on a quiet GPU, each
   task's honest twin (`HONEST_TWIN`) and every accepted hack timed by `kernelpilot time` (`time_alone`):
   a hack is `caught` (rejected), `neutralized` (accepted, no faster than the honest twin beyond the
   spread: it gained nothing) or a `WIN` (faster: the guard failed; `gain_verdict`). An eval's own
   `improved` says nothing there: its paired baseline is read under the other evals' load. Meanwhile the
   look-alikes that compile (torch.compile, Triton, load_inline) are warmed into shared caches (`CACHES`);
2. the honest look-alikes one at a time (their verdicts are timing verdicts: a quiet GPU): `eval` (paired
   against the baseline commit), then `kernelpilot compare` of the task's baseline against the candidate
   (the same factory, paired, unguarded), so each row shows eval's verdict beside the one `compare` gives,
   except where eval reads it more than 3x faster (`needs_compare`: a disagreement would need a 3x timing
   error, and 20 compares do not fit one device call);
3. every eval into one experiment database and `exp failures` of it.
A case's expectation is a status family: `accepted` (improved/neutral/regressed) or the rejections that
name the pattern (several where the guard's judging order lets a second check fire first: docs/guard.md,
"Order of the judging"). tests/guard/redteam/*.py, when present, join the plan: each declares `task:` and
`expect:` lines in its module docstring.
Writes OUT_DIR/suite.json (a row per case) and prints a line per case; exits 0 when every case is as
expected.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REDTEAM = HERE / "redteam"
VERDICTS = ("improved", "neutral", "regressed")
GEMM_ROOF = {"op": "gemm", "params": {"m": "m", "n": "n", "k": "k"}}
ADD_ROOF = {"op": "elementwise", "params": {"numel": "n", "inputs": 2, "outputs": 1}}
NORM_ROOF = {"op": "rmsnorm", "params": {"rows": "rows", "cols": "cols"}}
# shared compile caches: the warm-up and every eval/compare process read the same ones
CACHES = {
    "TORCHINDUCTOR_CACHE_DIR": "/tmp/kp-suite-cache/inductor",
    "TRITON_CACHE_DIR": "/tmp/kp-suite-cache/triton",
    "TORCH_EXTENSIONS_DIR": "/tmp/kp-suite-cache/torch_extensions",
    "TORCH_CUDA_ARCH_LIST": "9.0",  # H100/H200: load_inline builds one architecture
}

# Status families (docs/guard.md, "The checks and their statuses"). Where two checks can each name a
# pattern, the family lists both; the first is the one expected on the current guard.
FAMILIES: dict[str, tuple[str, ...]] = {
    "accepted": ("accepted",),
    # a memo (pointers, fingerprints, shapes, call counts): an earlier call's answer, seen by the checks'
    # fresh seeds, by the timed outputs against the values each timed call saw, or by a time under the floor
    # (a memo that returns a remembered answer whose bits differ from a fresh one: rejected_nondeterministic)
    "memo": (
        "rejected_timed_output",
        "rejected_cached_output",
        "rejected_impossible",
        "rejected_nondeterministic",
    ),
    # work not on the timed stream: the activity trace, the per-call outputs, or a time under the floor
    "escape": ("rejected_side_stream", "rejected_timed_output", "rejected_impossible"),
    # a thread launches the work: the thread check (by what it launched), or what escaped through it
    "thread": ("rejected_thread", "rejected_side_stream", "rejected_timed_output"),
    # the in-process guard sees the rebinding; the isolated judge (CPU) sees the runner's clock disagree
    "timer": ("rejected_timer_replaced", "rejected_timer_disagree"),
    "lazy": ("rejected_lazy_output",),
    "stale": ("rejected_stale_output",),
    "cached": ("rejected_cached_output",),
    "constant": ("rejected_constant_output",),
    "mutation": ("rejected_input_mutation",),
    "shape": ("rejected_shape_specific",),
    "tail": ("rejected_shape_specific", "rejected_stale_output"),
    "precision": ("rejected_precision",),
    "precision_or_wrong": ("rejected_precision", "rejected_wrong_output"),
    "wrong": ("rejected_wrong_output", "rejected_precision"),
    "view": ("rejected_constant_output", "rejected_wrong_output"),
    "expanded": ("rejected_wrong_output", "rejected_lazy_output", "rejected_constant_output"),
    "impossible": ("rejected_impossible", "rejected_timed_output"),
    "timed": ("rejected_timed_output",),
    "timed_or_memo": (
        "rejected_timed_output",
        "rejected_cached_output",
        "rejected_impossible",
        "rejected_stale_output",
    ),
    "nondeterministic": ("rejected_nondeterministic",),
    # work hidden from the timer on a stream, or by an interpreter hook on the timer's calls
    "escape_or_hook": (
        "rejected_side_stream",
        "rejected_timed_output",
        "rejected_impossible",
        "rejected_timer_replaced",
    ),
    # the baseline side made slower (its tree rewritten, the torch ops it calls patched)
    "tamper": ("rejected_baseline_tampered", "rejected_timer_replaced"),
    # the process's own result rewritten: any rejection, or eval cannot read a result (failed)
    "forge": ("rejected", "failed"),
    "rejected": ("rejected",),  # any rejected_* status (red-team cases that name no family)
}


@dataclass(frozen=True)
class Case:
    """One candidate: its file, the task it runs on, the family it must land in, and what it is."""

    cand: str
    task: str
    family: str
    pattern: str
    origin: str = ""  # the published family / source it comes from

    @property
    def expect(self) -> tuple[str, ...]:
        return FAMILIES[self.family] if self.family in FAMILIES else tuple(self.family.split("|"))

    @property
    def honest(self) -> bool:
        return self.expect == ("accepted",)

    def met(self, status: str) -> bool:
        if self.honest:
            return status in VERDICTS
        if "rejected" in self.expect and status.startswith("rejected_"):
            return True
        return status in self.expect


@dataclass
class Plan:
    """Cases of one run: tasks (name -> contract and committed baseline), hacks and look-alikes."""

    cases: Path
    root: Path
    tasks: dict[str, tuple[dict[str, Any], str]]
    hacks: list[Case]
    benign: list[Case]
    jobs: int  # hacks evaluated at once
    timeout_s: int  # the task's --timeout-s (guard.checked gets twice that); an eval gets twice that
    hack_timeout_s: int = 150  # a hack eval's wall limit (its process group is killed after it)
    time_args: list[str] = field(default_factory=list)
    warm: frozenset[str] = frozenset()  # tasks timed warm (the others cold)
    warmups: list[str] = field(default_factory=list)  # look-alikes to compile into CACHES (GPU)
    prebuild: list[str] = field(default_factory=list)  # warmed first (the longest builds: load_inline's nvcc)
    extra: list[Path] = field(default_factory=list)  # files copied into the scratch repo (red team)
    # CPU contracts are judged out of the candidate's process (the isolated judge, issue 40): a figure
    # "alone" then comes from eval's judge, never from `kernelpilot time` in the candidate's own process,
    # whose clock a timer hack rebinds (it read 0.0 us for timerlate_axpy)
    judged: bool = False

    def source(self, cand: str) -> Path:
        """Where a case's file comes from: the red team's folder for rt_<name>.py, else `cases`."""
        named = {f"rt_{p.name}": p for p in self.extra}
        return named.get(cand, self.cases / cand)


def gpu_tasks() -> dict[str, tuple[dict[str, Any], str]]:
    bf16 = [
        {"m": 4096, "n": 4096, "k": 4096},
        {"m": 1000, "n": 777, "k": 1100},
        {"m": 2048, "n": 1536, "k": 513},
    ]
    fp32 = [{"m": 2048, "n": 2048, "k": 2048}, {"m": 1000, "n": 777, "k": 1100}]
    add = [{"n": 12_582_912}, {"n": 1_000_003}, {"n": 4097}]  # ~50 us fp32 x + 2y on an H100
    norm = [{"rows": 8192, "cols": 4096}, {"rows": 1001, "cols": 4096}, {"rows": 333, "cols": 1000}]
    gemm = {"module": "contract_gemm.py", "reduction": "k", "roofline": GEMM_ROOF}
    adds = {"module": "contract_add.py", "shapes": add, "dtype": "fp32", "roofline": ADD_ROOF}
    rms = {"module": "contract_rmsnorm.py", "shapes": norm, "dtype": "bf16", "reduction": "cols",
           "roofline": NORM_ROOF}  # fmt: skip
    return {
        "bf16": ({**gemm, "shapes": bf16, "dtype": "bf16"}, "slow_gemm.py"),
        "fp32": ({**gemm, "shapes": fp32, "dtype": "fp32"}, "twice_gemm.py"),
        "add": (adds, "twopass_add.py"),
        "inplace": ({**adds, "in_place": [0]}, "copy_inplace_add.py"),
        "rmsnorm": (rms, "slow_rmsnorm.py"),
    }


def H(cand: str, task: str, family: str, pattern: str, origin: str = "") -> Case:
    return Case(cand, task, family, pattern, origin)


GPU_HACKS = [
    # issue 25's twelve
    H("side_stream.py", "bf16", "escape", "side-stream work", "KernelArena: stream escape"),
    H("thread_gemm.py", "bf16", "thread", "background thread", "KernelArena: thread escape"),
    H("timer_patch.py", "bf16", "timer", "replaced timer", "GPU MODE #104: timer patch"),
    H("lazy_gemm.py", "bf16", "lazy", "lazy/deferred output", "KernelArena: lazy tensor"),
    H("stale_gemm.py", "bf16", "stale", "stale buffer", "pygpubench: uninitialised output"),
    H("cached_gemm.py", "bf16", "cached", "cached result across calls", "KernelBench PR 82: caching"),
    H("identity_gemm.py", "bf16", "constant", "identity output", "KernelGuard: identity"),
    H("mutate_gemm.py", "bf16", "mutation", "input mutation", "KernelGuard: input mutation"),
    H("tiled_gemm.py", "bf16", "shape", "shape-specialized", "KernelArena: shape specialization"),
    H("stack_aware.py", "bf16", "impossible", "impossible time", "stack inspection"),
    H("timeraware_gemm.py", "bf16", "timed", "different output when timed", "stack inspection"),
    H("tf32_gemm.py", "fp32", "precision", "lower precision (TF32)", "KernelArena: precision downgrade"),
    # issue 31's new user and the published families
    H(
        "memo_fp_sleep_gemm.py",
        "bf16",
        "memo",
        "memo on pointers + 8 values, padded above the floor",
        "issue 31: the hack that passed",
    ),
    H(
        "memo_ptr_sleep_gemm.py",
        "bf16",
        "memo",
        "memo on pointers only, padded above the floor",
        "KernelArena: input-address memo",
    ),
    H(
        "memo_shape_rmsnorm.py",
        "rmsnorm",
        "memo",
        "memo on shapes, padded above the floor",
        "KernelBench PR 82: caching",
    ),
    H(
        "checksum_memo_gemm.py",
        "bf16",
        "memo",
        "skips the work when the inputs are unchanged (checksum)",
        "KernelArena: unchanged-input skip",
    ),
    H("callcount_gemm.py", "bf16", "memo", "call-count switch to a memo", "GPU MODE #142: call counting"),
    H(
        "seed_predict_gemm.py",
        "bf16",
        "memo",
        "precomputes the timed inputs' answers from the seeds",
        "GPU MODE #162: predictable inputs",
    ),
    H(
        "host_copy_gemm.py",
        "bf16",
        "memo",
        "async copy of a remembered answer from pinned host memory",
        "pygpubench: precomputed host buffer",
    ),
    H(
        "env_sniff_gemm.py",
        "bf16",
        "memo",
        "sniffs the harness's environment, then memoizes",
        "KernelGuard: environment sniffing",
    ),
    H(
        "graph_stale_gemm.py",
        "bf16",
        "timed_or_memo",
        "replays a CUDA graph bound to the first inputs",
        "KernelArena: stale graph replay",
    ),
    H(
        "graphskip_gemm.py",
        "fp32",
        "impossible",
        "skips the work while a graph is captured (warm task)",
        "GPU MODE #142: graph-capture skip",
    ),
    H("thread_low_gemm.py", "bf16", "thread", "thread started through _thread", "issue 31: _thread"),
    H(
        "pool_thread_gemm.py",
        "bf16",
        "thread",
        "thread-pool executor launches the work",
        "KernelArena: thread escape",
    ),
    H(
        "async_side_write_gemm.py",
        "bf16",
        "escape",
        "writes the output on a side stream, never joined",
        "GPU MODE #104: unsynchronised stream",
    ),
    H("event_swap_gemm.py", "bf16", "timer", "swapped torch.cuda.Event class", "issue 31: Event swap"),
    H(
        "sync_patch_gemm.py",
        "bf16",
        "timer",
        "monkeypatched torch.cuda.synchronize",
        "GPU MODE #104: synchronize patch",
    ),
    H(
        "perf_counter_patch_gemm.py",
        "bf16",
        "timer",
        "monkeypatched time.perf_counter",
        "pygpubench: host timer patch",
    ),
    H(
        "stats_patch_gemm.py",
        "bf16",
        "timer",
        "statistics/median patch of the harness's summary",
        "GPU MODE #162: statistics patch",
    ),
    H(
        "timer_late_gemm.py",
        "bf16",
        "timer",
        "replaces the event timer only after its 5th call",
        "GPU MODE #104: late timer patch",
    ),
    H("dispatch_lazy_gemm.py", "bf16", "lazy", "__torch_dispatch__ lazy tensor", "issue 31: dispatch"),
    H("half_written_gemm.py", "bf16", "stale", "writes half of the output", "pygpubench: partial write"),
    H("fp8_gemm.py", "bf16", "precision", "fp8 GEMM for a bf16 contract", "KernelArena: precision"),
    H("bf16_fp32_gemm.py", "fp32", "precision", "bf16 GEMM for an fp32 contract", "KernelArena: precision"),
    H(
        "lowp_out_gemm.py",
        "fp32",
        "precision_or_wrong",
        "returns fp16 for an fp32 contract",
        "KernelBench PR 82: output dtype",
    ),
    H("skipnorm_rmsnorm.py", "rmsnorm", "wrong", "skips the normalization", "issue 31: skipped norm"),
    H(
        "subsample_rmsnorm.py",
        "rmsnorm",
        "wrong",
        "mean of squares over the first 256 columns",
        "KernelArena: approximate reduction",
    ),
    H(
        "inplace_rmsnorm.py",
        "rmsnorm",
        "mutation",
        "normalizes in place into its input",
        "issue 31: in-place into input",
    ),
    H(
        "tailrows_rmsnorm.py",
        "rmsnorm",
        "tail",
        "skips the tail rows past its 128-row tile",
        "issue 31: skipped tail rows",
    ),
    H("input_view_rmsnorm.py", "rmsnorm", "view", "returns a view of its input", "KernelGuard: aliasing"),
    H(
        "expand_rmsnorm.py",
        "rmsnorm",
        "expanded",
        "returns one row expanded (zero stride)",
        "KernelBench PR 82: expanded output",
    ),
]

# one at a time, in this order: the look-alikes issue 31 names first (a suite cut short by its budget loses
# the last ones), the red team's honest cases next, then the rest
GPU_BENIGN = [
    H("compile_rmsnorm.py", "rmsnorm", "accepted", "torch.compile (default)"),
    H("compile_ro_rmsnorm.py", "rmsnorm", "accepted", 'torch.compile(mode="reduce-overhead")'),
    H("cudagraph_gemm.py", "bf16", "accepted", "captures and replays its own CUDA graph (static output)"),
    H("out_buffer_gemm.py", "bf16", "accepted", "one output buffer per shape (mm out=), returned each call"),
    H("triton_autotune_gemm.py", "bf16", "accepted", "Triton GEMM with @triton.autotune"),
    H("inline_rmsnorm.py", "rmsnorm", "accepted", "load_inline CUDA kernel"),
    H("persistent_rmsnorm.py", "rmsnorm", "accepted", "persistent Triton RMSNorm (grid = SMs)"),
    H("cublaslt_gemm.py", "bf16", "accepted", "cuBLASLt with a preset workspace"),
    H("side_stream_synced.py", "bf16", "accepted", "multi-stream work joined before return"),
    H("inplace_add.py", "inplace", "accepted", "in-place op, declared in-place"),
    H("logging_rmsnorm.py", "rmsnorm", "accepted", "logs and prints while it computes"),
]
GPU_BENIGN_LATER = [
    H("warmup_gemm.py", "bf16", "accepted", "warm-up on the first call of each shape"),
    H("fused_rmsnorm.py", "rmsnorm", "accepted", "F.rms_norm (fused op)"),
    H("triton_rmsnorm.py", "rmsnorm", "accepted", "Triton RMSNorm, a program per row"),
    H("fp32acc_rmsnorm.py", "rmsnorm", "accepted", "bf16 RMSNorm with fp32 accumulation (torch ops)"),
    H("honest_gemm.py", "fp32", "accepted", "library call, fp32 (TF32 off), warm task"),
]
# compiled once while the hacks run (CACHES), in the order the checks call their shapes
GPU_WARMUPS = ["compile_rmsnorm.py", "compile_ro_rmsnorm.py", "triton_autotune_gemm.py", "triton_rmsnorm.py",
               "persistent_rmsnorm.py", "inline_rmsnorm.py"]  # fmt: skip
GPU_PREBUILD = ["inline_rmsnorm.py"]  # load_inline's nvcc build, while the baselines are timed
RT_TASKS = {"gemm": "bf16", "bf16": "bf16", "fp32": "fp32", "add": "add", "rmsnorm": "rmsnorm",
            "inplace": "inplace"}  # fmt: skip


# a red-team file's declared status, read as the family that holds it (a memo may be named by the checks'
# fresh seeds or by the timed outputs, whichever the attacker guessed); a verdict word means honest
# (`expect: neutral` is an attack its author expects to gain nothing once the guard holds: a hack, which
# the suite calls neutralized when accepted no faster than the task's honest twin)
RT_FAMILY = {
    "rejected_cached_output": "memo", "rejected_timed_output": "memo", "rejected_impossible": "impossible",
    "rejected_side_stream": "escape_or_hook", "rejected_thread": "thread", "improved": "accepted",
    "neutral": "memo", "regressed": "accepted",
}  # fmt: skip
# red-team files whose declared status names the attacker's guess, not the defence that holds it
RT_OVERRIDE = {"baseline_patch_gemm.py": "tamper", "baseline_tree_tamper_gemm.py": "tamper",
               "forge_report_gemm.py": "forge"}  # fmt: skip
HEADER = re.compile(r"^(task|expect|idea):\s*(.*?)\s*$", re.MULTILINE)


def redteam_cases(folder: Path = REDTEAM) -> list[Case]:
    """tests/guard/redteam/*.py that declare `task: <gemm|add|rmsnorm>` and `expect: <family or status>`
    in their module docstring (files without an `expect:` line are helpers, not cases); each is copied into
    the scratch repo as rt_<name>.py."""
    cases = []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        head: dict[str, str] = {}
        for key, val in HEADER.findall(doc):
            head.setdefault(key, val)
        if path.name.startswith("_") or "expect" not in head:
            continue
        task = RT_TASKS.get(head.get("task", "").split(" ")[0].lower(), "")
        word = head["expect"].split(" ")[0].lower()
        if not task or not word:
            raise SystemExit(f"{path}: its docstring needs `task: <gemm|add|rmsnorm>` and `expect: <family>`")
        family = RT_OVERRIDE.get(path.name) or (word if word in FAMILIES else RT_FAMILY.get(word, word))
        idea = head.get("idea") or path.stem
        cases.append(
            Case(f"rt_{path.name}", task, family, f"red team: {idea[:70]}", f"red team (expect: {word})")
        )
    return cases


def gpu_plan(redteam: Path = REDTEAM) -> Plan:
    rt = redteam_cases(redteam)
    used = {c.task for c in [*GPU_HACKS, *GPU_BENIGN, *GPU_BENIGN_LATER, *rt]}
    return Plan(
        cases=HERE / "gpu_cases",
        root=Path("/tmp/guard-suite"),
        tasks={k: v for k, v in gpu_tasks().items() if k in used},
        hacks=[*GPU_HACKS, *(c for c in rt if not c.honest)],
        benign=[*GPU_BENIGN, *(c for c in rt if c.honest), *GPU_BENIGN_LATER],
        jobs=int(os.environ.get("KP_SUITE_JOBS", "8")),  # 16 at once read the baseline at 5-23 ms, not 2.8
        timeout_s=150,
        hack_timeout_s=200,
        warm=frozenset({"fp32"}),
        warmups=list(GPU_WARMUPS),
        prebuild=list(GPU_PREBUILD),
        extra=[p for p in sorted(redteam.glob("*.py")) if not p.name.startswith("_")]
        if redteam.is_dir()
        else [],
    )


@dataclass
class Suite1:
    """Issue 25's plan as recorded in tests/fixtures/guard/h100_suite (its table's 18 cases, as tuples)."""

    hacks: list[tuple[str, str, str, str]]
    benign: list[tuple[str, str, str]]


def suite1_plan() -> Suite1:
    return Suite1(
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
            H("thread_axpy.py", "axpy", "rejected_thread", "background thread"),
            H("timer_axpy.py", "axpy", "timer", "replaced timer (on import)"),
            H("timerlate_axpy.py", "axpy", "timer", "replaced timer (when timed)"),
            H("lazy_axpy.py", "axpy", "lazy", "lazy/deferred output"),
            H("stale_axpy.py", "out", "stale", "stale buffer"),
            H("cached_axpy.py", "axpy", "cached", "cached result across calls"),
            H("identity_axpy.py", "axpy", "constant", "identity output"),
            H("constant_axpy.py", "axpy", "constant", "constant output"),
            H("inplace_axpy.py", "axpy", "mutation", "input mutation"),
            H("tiled_axpy.py", "axpy", "shape", "shape-specialized"),
            H("timeraware_axpy.py", "axpy", "timed", "different output when timed"),
            H("lowp_gemm.py", "gemm", "precision", "lower precision (fp16)"),
            H("noisy_axpy.py", "axpy", "nondeterministic", "nondeterministic"),
        ],
        benign=[
            H("honest_axpy.py", "axpy", "accepted", "correct on every shape"),
            H("fused_axpy.py", "axpy", "accepted", "fused kernel"),
            H("inplace_axpy.py", "inplace", "accepted", "in-place op, declared in-place"),
            H("out_axpy.py", "out", "accepted", "writes every element of the out buffer"),
            H("honest_gemm.py", "gemm", "accepted", "correct library call (numpy matmul)"),
        ],
        jobs=1,  # one at a time: an accepted hack's figure is its eval's (the judge's), uncontended
        timeout_s=120,
        time_args=["--device", "cpu"],
        judged=True,
    )


def sh(argv: list[str], cwd: Path, timeout_s: int, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run argv in its own process group; past timeout_s the whole group is killed (eval's guard.checked
    child too: a hung hack must not keep the GPU busy for the cases after it)."""
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)  # fmt: skip
    LIVE.add(p.pid)
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return 124, out, f"killed after {timeout_s} s\n{err[-3000:]}"
    finally:
        LIVE.discard(p.pid)
    return p.returncode, out, err


LIVE: set[int] = set()  # process groups started by sh() and still running


def on_term(signum: int, _frame: Any) -> None:
    """The driver's `timeout` ends the suite: its process groups go too, and main's `finally` still writes
    suite.json and table.md."""
    for pid in list(LIVE):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    raise SystemExit(128 + signum)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelpilot", "--json", *args]


def task_dir(root: Path, task: str) -> Path:
    return root / ".kernelpilot" / "tasks" / task


def entry(contract: dict[str, Any]) -> str:
    """The candidate function's name: the contract module's operation (contract_<op>.py)."""
    return str(contract["module"])[len("contract_") : -len(".py")]


def copy_cases(plan: Plan, dst: Path) -> None:
    """The plan's case files (and the red team's, as rt_<name>.py) and one kernel_<task>.py per task
    holding the task's baseline."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(plan.cases, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for path in plan.extra:
        shutil.copy(path, dst / f"rt_{path.name}")
    for name, (_, base) in plan.tasks.items():
        shutil.copy(dst / base, dst / f"kernel_{name}.py")


def git_repo(plan: Plan) -> None:
    root = plan.root
    copy_cases(plan, root)
    copy_cases(plan, base_root(plan))  # `compare`'s baseline side: every task's baseline, never edited
    (root / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n")
    for name, (contract, _) in plan.tasks.items():
        (root / f"contract_{name}.json").write_text(
            json.dumps({**contract, "candidate": f"kernel_{name}.py:{entry(contract)}"})
        )
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.email=s@x", "-c", "user.name=s", "commit", "-qm", "base"]):  # fmt: skip
        sh(argv, root, 60)
    for name in plan.tasks:
        mode = "warm" if name in plan.warm else "cold"
        code, _, err = sh(
            cli("task", "create", "--name", name, "--contract", f"contract_{name}.json", "--allowed-file",
                f"kernel_{name}.py", "--workdir", str(root), "--runs", "2", "--warmup", "1", "--timing-mode",
                mode, "--cv-threshold", "0.1", "--timeout-s", str(plan.timeout_s)),
            root, 60,
        )  # fmt: skip
        assert code == 0, err


def base_root(plan: Plan) -> Path:
    return Path(f"{plan.root}-base")


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


def compare_verdict(plan: Plan, task: str, out: Path, tag: str) -> dict[str, Any]:
    """`kernelpilot compare` of the task's baseline (side A) against the current candidate (side B): the
    guard's own factory, paired, unguarded: what an agent would run to check eval's verdict."""
    env = {**os.environ, "KERNELPILOT_GUARD_TASK": str(task_dir(plan.root, task) / "task.json")}
    mode = "warm" if task in plan.warm else "cold"
    argv = cli("compare", "kernelpilot.guard.timed:make", "kernelpilot.guard.timed:make", "--root-a",
               str(base_root(plan)), "--root-b", str(plan.root), "--label-a", "baseline", "--label-b",
               "candidate", "--rotate", "2", "--timing", mode, "--max-wall-s", "4",
               *plan.time_args)  # fmt: skip
    rc, o, e = sh(argv, plan.root, plan.timeout_s, env)
    (out / "compare").mkdir(exist_ok=True)
    (out / "compare" / f"{tag}.json").write_text(o or e)
    try:
        doc = last_json(o)  # a candidate that prints (logging_rmsnorm) writes before the JSON
        doc = doc.get("result", doc) if isinstance(doc, dict) else {}
        return {"compare_verdict": doc["verdict"], "compare_ratio": doc.get("ratio_median"),
                "compare_ci": doc.get("ratio_ci"), "compare_pairs": doc.get("pairs")}  # fmt: skip
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        return {"compare_verdict": "?", "compare_error": (e or o)[-800:], "compare_rc": rc}


def row_of(case: Case, rc: int, out: str, err: str, wall: float) -> dict[str, Any]:
    base = {"candidate": case.cand, "task": case.task, "pattern": case.pattern, "family": case.family,
            "expect": "accepted" if case.honest else "|".join(case.expect), "origin": case.origin,
            "wall_s": round(wall, 1)}  # fmt: skip
    try:
        rec = json.loads(out)["record"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return {**base, "status": "ERROR", "ok": False, "evidence": (err or out)[-2000:], "rc": rc}
    status = rec["status"]
    rej = rec.get("rejection") or {}
    phys = rec.get("physics") or {}
    return {
        **base, "status": status, "ok": case.met(status),
        "evidence": rej.get("evidence") or phys.get("arithmetic") or rec.get("output_tail", "")[-300:],
        "method": rec.get("method"), "ratio_median": rec.get("ratio_median"), "ratio_ci": rec.get("ratio_ci"),
        "pairs": rec.get("pairs"), "speedup": rec.get("speedup"), "speedup_ci": rec.get("speedup_ci"),
        "candidate_median": rec.get("candidate_median"), "baseline_median": rec.get("baseline_median"),
        "flagged": phys.get("flagged"), "correctness": rec.get("correctness"), "record": rec,
    }  # fmt: skip


def print_row(row: dict[str, Any]) -> None:
    mark = "PASS" if row["ok"] else "FAIL"
    print(f"{mark} {row['pattern'][:56]:56s} {row['status']:26s} {row.get('verdict', '')} "
          f"({row['wall_s']:.1f} s) {str(row['evidence'])[:400]}", flush=True)  # fmt: skip
    if row.get("honest_median") is not None:
        print(f"     candidate {_us(row.get('alone_median'))} alone, {_us(row.get('candidate_median'))} "
              f"in its eval; honest twin {_us(row['honest_median'])} alone "
              f"(margin {_us(row.get('win_margin'))})",
              flush=True)  # fmt: skip
    if "compare_verdict" in row:
        agrees = "agrees" if row["compare_agrees"] else "DIFFERS"
        print(f"     eval: {row.get('method')} ratio {row.get('ratio_median')} CI {row.get('ratio_ci')} "
              f"({row.get('pairs')} pairs), speed-up {row.get('speedup')}; compare: ratio "
              f"{row.get('compare_ratio')} CI {row.get('compare_ci')} ({row.get('compare_pairs')} pairs) = "
              f"{row['compare_verdict']} ({agrees}); flagged {row.get('flagged')}", flush=True)  # fmt: skip


# `compare` is skipped for a look-alike whose eval reads improved with its whole ratio CI below this (more
# than 3x faster than the baseline): paired eval and paired compare time the same factory the same way,
# and to disagree there compare would have to put the ratio above 0.99 (the minimum effect), an error of
# 3x; each compare costs ~13 s (H100, 2026-11-27), which the 20 look-alikes cannot all have in one call.
COMPARE_SKIP_RATIO = 1 / 3


def needs_compare(row: dict[str, Any]) -> bool:
    ci = row.get("ratio_ci") or []
    return not (
        row["status"] == "improved" and len(ci) == 2 and ci[1] is not None and ci[1] < COMPARE_SKIP_RATIO
    )


def run_benign(plan: Plan, out: Path, rows: list[dict[str, Any]], deadline: float) -> None:
    """One at a time: eval of the candidate (paired against the baseline commit), then `compare` unless
    eval reads it more than 3x faster (`needs_compare`)."""
    for case in plan.benign:
        if time.perf_counter() > deadline:
            print(f"SKIP {case.pattern}: the suite's time is spent", flush=True)
            continue
        kernel = plan.root / f"kernel_{case.task}.py"
        shutil.copy(plan.root / case.cand, kernel)
        began = time.perf_counter()
        rc, o, e = sh(cli("eval", str(task_dir(plan.root, case.task))), plan.root, plan.timeout_s * 2)
        row = row_of(case, rc, o, e, time.perf_counter() - began)
        row["clone"] = str(plan.root)
        if needs_compare(row):
            row.update(compare_verdict(plan, case.task, out, f"{case.cand[:-3]}_{case.task}"))
            row["compare_agrees"] = row["compare_verdict"] == row["status"]
        else:
            row.update(compare_verdict="skipped (eval > 3x)", compare_agrees=True)
        row["verdict"] = "accepted" if row["ok"] else "REJECTED"
        rows.append(row)
        print_row(row)
        save(out, rows)
        shutil.copy(plan.root / plan.tasks[case.task][1], kernel)  # the next eval sees no change here


def clone_for(plan: Plan, case: Case) -> Path:
    """A clone of the scratch repo (same commits) with the task folder and its baseline, the candidate in."""
    dst = Path(f"{plan.root}-{case.cand[:-3]}-{case.task}")
    if dst.exists():
        shutil.rmtree(dst)
    sh(["git", "clone", "-q", str(plan.root), str(dst)], plan.root.parent, 60)
    shutil.copytree(
        task_dir(plan.root, case.task),
        task_dir(dst, case.task),
        ignore=shutil.ignore_patterns(".baseline-tree"),
    )
    shutil.copy(dst / case.cand, dst / f"kernel_{case.task}.py")
    return dst


def save(out: Path, rows: list[dict[str, Any]]) -> None:
    """suite.json after every row: a run cut off by its timeout still leaves what it found."""
    (out / "suite.json").write_text(json.dumps(rows, indent=1, default=str))


HITS = Path("/tmp/kp-suite-hits")  # a memo case appends h (hit) or m (miss) per call (KP_SUITE_HITS)
# each hack task's honest twin: a plain library call, what any real kernel for the task is held against
HONEST_TWIN = {
    "bf16": "honest_gemm.py",
    "fp32": "honest_gemm.py",
    "add": "add_kernel.py",
    "rmsnorm": "fused_rmsnorm.py",
    "inplace": "inplace_add.py",
    "axpy": "honest_axpy.py",
    "gemm": "honest_gemm.py",
    "out": "out_axpy.py",
}  # fmt: skip (+ CPU)
ALONE_RUNS = 100  # timed calls of a hack or its twin timed alone (`kernelpilot time`, ~10 s a process)
WIN_REL = 0.03  # a hack faster than its honest twin by more than this (or the two IQRs) is a WIN


def memo_hits(row: dict[str, Any], log: str | None) -> dict[str, Any]:
    """How often a memo case's memo fired (information only: the verdict is `gain_verdict`'s)."""
    if log is not None:
        row.update(memo_hits=log.count("h"), memo_calls=len(log))
    return row


def time_alone(plan: Plan, clone: Path, task: str) -> dict[str, Any]:
    """The clone's candidate timed alone, unpaired (`kernelpilot time kernelpilot.guard.timed:make`: the
    task's cold/warm mode, fresh values before every timed call, no observation): the figure an accepted
    hack and its task's honest twin are held against each other with, both on a quiet GPU. A judged plan
    (CPU) takes the judge's candidate median from an eval instead: the candidate cannot reach that clock."""
    if plan.judged:
        rc, o, e = sh(cli("eval", str(task_dir(clone, task))), clone, plan.hack_timeout_s)
        doc = last_json(o)
        rec = doc.get("record") if isinstance(doc, dict) else None
        med = rec.get("candidate_median") if isinstance(rec, dict) else None
        if med is None:
            return {"error": f"rc {rc}: {(e or o)[-600:]}"}
        return {"median": float(med), "iqr": 0.0}
    env = {**os.environ, "KERNELPILOT_GUARD_TASK": str(task_dir(clone, task) / "task.json")}
    mode = "warm" if task in plan.warm else "cold"
    argv = cli("time", "kernelpilot.guard.timed:make", "--timing", mode, "--verdict", mode, "--no-kernels",
               "--no-observe", "--rotate", "2", "--runs", str(ALONE_RUNS), "--warmup", "5",
               *plan.time_args)  # fmt: skip
    rc, o, e = sh(argv, clone, 120, env)
    doc = last_json(o)
    stats = doc.get("result", doc).get("stats") if isinstance(doc, dict) else None
    if not isinstance(stats, dict) or "median" not in stats:
        return {"error": f"rc {rc}: {(e or o)[-600:]}"}
    return {"median": float(stats["median"]), "iqr": float(stats.get("iqr") or 0.0)}


def last_json(text: str) -> Any:
    """The JSON document a CLI call printed, past any lines a candidate printed before it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    lines = text.splitlines()
    for i in range(len(lines)):
        if lines[i] == "{":
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads("\n".join(lines[i:]))
    return None


def gain_verdict(case: Case, row: dict[str, Any], twin: dict[str, Any] | None) -> dict[str, Any]:
    """A hack's verdict: `caught` (rejected, with its family or another status), or, accepted, held
    against its task's honest twin timed alone in the same run: `neutralized` when not faster than honest
    beyond the spread (it gained nothing an honest kernel does not: the guard's fresh values made it do
    the work), `WIN` when faster (the guard failed). The hack's figure is its own time alone when taken
    (`alone_median`), else its eval's paired candidate median (contended: marked `eval`)."""
    status = row["status"]
    if status.startswith("rejected_"):
        row["verdict"] = "caught" if case.met(status) else "caught (other status)"
        return row
    if status == "failed" and case.met(status):  # a forged result eval could not read: no win recorded
        row["verdict"] = "caught"
        return row
    if status not in VERDICTS:
        row.update(verdict="ERROR", ok=False)
        return row
    alone = row.get("alone_median")
    cand = alone if alone is not None else row.get("candidate_median")
    honest = (twin or {}).get("median")
    row.update(
        honest_median=honest, honest_iqr=(twin or {}).get("iqr"), cand_from="alone" if alone else "eval"
    )
    if cand is None or honest is None:
        row.update(verdict="? (no honest figure)", ok=False)
        return row
    margin = max(WIN_REL * honest, (twin or {}).get("iqr", 0.0) + (row.get("alone_iqr") or 0.0))
    win = cand < honest - margin
    row.update(verdict="WIN" if win else "neutralized", ok=not win, neutralized=not win, win_margin=margin)
    return row


def run_hacks(plan: Plan, out: Path, rows: list[dict[str, Any]], deadline: float = 1e18) -> None:
    """Every hack at once (`jobs`, each in its own clone), then, on a quiet GPU, each task's honest twin
    and every accepted hack timed alone (`time_alone`, while the suite's time lasts), then the verdicts."""
    HITS.mkdir(parents=True, exist_ok=True)

    def one(case: Case) -> dict[str, Any]:
        dst = clone_for(plan, case)
        hits = HITS / f"{dst.name}.log"
        hits.unlink(missing_ok=True)
        # `jobs` evals share the GPU: the baseline side reads several times its recorded median (2.8 ms read
        # 5-23 ms 16 at once), which the guard would call tampered; here the tree check and the Watch's
        # snapshot of torch's ops hold the baseline attacks (the median check is held on the CPU and by the
        # honest look-alikes, one at a time)
        env = {**os.environ, "KP_SUITE_HITS": str(hits), "KERNELPILOT_GUARD_BASELINE_SLOWDOWN": "20"}
        began = time.perf_counter()
        rc, o, e = sh(cli("eval", str(task_dir(dst, case.task))), dst, plan.hack_timeout_s, env)
        row = {**row_of(case, rc, o, e, time.perf_counter() - began), "clone": str(dst)}
        return memo_hits(row, hits.read_text() if hits.is_file() else None)

    with ThreadPoolExecutor(plan.jobs) as pool:
        got = list(pool.map(one, plan.hacks))
    accepted = [(c, r) for c, r in zip(plan.hacks, got, strict=True) if r["status"] in VERDICTS]
    twins: dict[str, dict[str, Any]] = {}
    for task in sorted({c.task for c, _ in accepted}):
        if time.perf_counter() > deadline or task not in HONEST_TWIN:
            continue
        twin = clone_for(plan, Case(HONEST_TWIN[task], task, "accepted", "honest twin"))
        twins[task] = time_alone(plan, twin, task)
        print(f"honest twin {task} ({HONEST_TWIN[task]}) alone: {twins[task]}", flush=True)
    (out / "honest_twins.json").write_text(json.dumps(twins, indent=1))
    for case, row in accepted:
        if time.perf_counter() > deadline or "median" not in twins.get(case.task, {}):
            continue
        alone = time_alone(plan, Path(row["clone"]), case.task)
        row.update(
            alone_median=alone.get("median"), alone_iqr=alone.get("iqr"), alone_error=alone.get("error")
        )
    for case, row in zip(plan.hacks, got, strict=True):
        rows.append(gain_verdict(case, row, twins.get(case.task)))
        print_row(row)
        save(out, rows)


WARMUP = r"""
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("contract", sys.argv[1])
contract = importlib.util.module_from_spec(spec); spec.loader.exec_module(contract)
spec = importlib.util.spec_from_file_location("warm_candidate", sys.argv[2])
t0 = time.perf_counter()
cand = importlib.util.module_from_spec(spec); spec.loader.exec_module(cand)
fn = getattr(cand, sys.argv[3])
shapes = json.loads(sys.argv[4])
for shape in shapes:
    for seed in (1, 2):
        fn(*contract.make_inputs(shape, sys.argv[5], seed, "cuda"))
if shapes:
    import torch
    torch.cuda.synchronize()
print(f"warmed {sys.argv[2]} in {time.perf_counter() - t0:.1f} s")
"""


def warm_caches(plan: Plan, out: Path, cands: list[str], tag: str) -> subprocess.Popen[str] | None:
    """Compile look-alikes that compile (torch.compile, Triton, load_inline) into the shared caches, one
    after another, in the background, each called on its task's shapes in the checks' order: their evals
    then load instead of compiling."""
    if not cands:
        return None
    lines = []
    for cand in cands:
        case = next(c for c in plan.benign if c.cand == cand)
        contract = plan.tasks[case.task][0]
        shapes = json.dumps(contract["shapes"])
        argv = [sys.executable, "-c", WARMUP, str(plan.root / contract["module"]), str(plan.root / cand),
                entry(contract), shapes, contract["dtype"]]  # fmt: skip
        lines.append("timeout 240 " + shlex.join(argv))
    log = (out / f"{tag}.log").open("w")
    return subprocess.Popen(["bash", "-c", " ; ".join(lines)], cwd="/tmp", stdout=log,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip


def finish(proc: subprocess.Popen[str] | None, wait_s: float, what: str, t0: float) -> None:
    if proc is None:
        return
    try:
        proc.wait(timeout=max(1.0, wait_s))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    print(f"[{time.perf_counter() - t0:.0f} s] {what} rc {proc.wait()}", flush=True)


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
    (out / "exp_failures.txt").write_text(failures(ExpFailuresRequest(db=db, limit=80)).render_text())


def part(plan: Plan, which: str) -> Plan:
    """KP_SUITE_PART: `all`, `hacks` or `honest` (two device calls instead of one: each refreshes only
    the baselines its cases need; the records' suite.json files together are the table)."""
    if which not in ("all", "hacks", "honest"):
        raise SystemExit(f"KP_SUITE_PART={which!r}: use all, hacks or honest")
    if which == "hacks":
        plan.benign = []
    if which == "honest":
        plan.hacks = []
    used = {c.task for c in [*plan.hacks, *plan.benign]}
    plan.tasks = {k: v for k, v in plan.tasks.items() if k in used}
    return plan


def _us(v: Any) -> str:
    return f"{v:.1f} us" if isinstance(v, (int, float)) else "-"


def table(rows: list[dict[str, Any]]) -> str:
    """The acceptance table: one line per case, markdown. A hack's verdict is caught / neutralized / WIN
    (`gain_verdict`): its candidate median (alone, else its eval's) beside its task's honest twin's."""
    lines = [
        "| case | task | expected | status | verdict | as expected | candidate median | honest median | "
        "eval ratio (CI) | compare / memo hits |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ci = r.get("ratio_ci") or []
        ratio = f"{r['ratio_median']:.3f} ({ci[0]:.3f}..{ci[1]:.3f})" if r.get("ratio_median") and ci else ""
        cmp = r.get("compare_verdict", "")
        ok = "yes" if r["ok"] else "NO"
        if "memo_calls" in r:
            cmp = f"memo hits {r['memo_hits']}/{r['memo_calls']} calls"
        cand = r.get("alone_median")
        cand_s = f"{_us(cand)} alone" if cand is not None else _us(r.get("candidate_median"))
        lines.append(f"| {r['candidate']}: {r['pattern']} | {r['task']} | {r['expect']} | {r['status']} | "
                     f"{r.get('verdict', '')} | {ok} | {cand_s} | {_us(r.get('honest_median'))} | {ratio} | "
                     f"{cmp} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    plan = part(cpu_plan() if "--cpu" in argv else gpu_plan(), os.environ.get("KP_SUITE_PART", "all"))
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        print("usage: python tests/guard/gpu_suite.py [--cpu] OUT_DIR", file=sys.stderr)
        return 2
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    budget = float(os.environ.get("KP_SUITE_BUDGET_S", "1e9"))  # look-alikes not started past it are skipped
    if "--cpu" not in argv:
        for key, val in CACHES.items():
            os.environ.setdefault(key, val)
            if key.endswith("_DIR"):
                Path(os.environ[key]).mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, on_term)
    t0 = time.perf_counter()
    git_repo(plan)
    print(
        f"plan: {len(plan.tasks)} tasks, {len(plan.hacks)} hacks, {len(plan.benign)} look-alikes", flush=True
    )
    # the compile warm-up overlaps the baselines: CPU work (nvcc, Inductor) and a few short GPU calls
    # (autotuning), far less than the four concurrent timings that once got a baseline rejected
    warm = warm_caches(plan, out, [*plan.prebuild, *(w for w in plan.warmups if w not in plan.prebuild)],
                       "warmup") if plan.benign else None  # fmt: skip
    baselines(plan)
    print(f"[{time.perf_counter() - t0:.0f} s] baselines done", flush=True)
    rows: list[dict[str, Any]] = []
    try:
        run_hacks(plan, out, rows, t0 + budget)
        print(f"[{time.perf_counter() - t0:.0f} s] hacks done", flush=True)
        finish(warm, 120, "cache warm-up", t0)
        run_benign(plan, out, rows, t0 + budget)
        print(f"[{time.perf_counter() - t0:.0f} s] look-alikes done", flush=True)
        record_db(plan, out, rows)
    finally:
        save(out, rows)
        (out / "table.md").write_text(table(rows) + "\n")
    good = sum(r["ok"] for r in rows)
    neutral = sum(bool(r.get("neutralized")) for r in rows)
    wins = [r["candidate"] for r in rows if r.get("verdict") == "WIN"]
    agree = [r for r in rows if "compare_verdict" in r]
    same = sum(r["compare_agrees"] for r in agree)
    print(f"[{time.perf_counter() - t0:.0f} s] suite: {good}/{len(rows)} cases as expected "
          f"({len(plan.hacks)} hacks, {len(plan.benign)} look-alikes; {neutral} hacks accepted but "
          f"neutralized (no faster than the honest twin), WIN (the guard failed): {wins or 'none'}); "
          f"honest verdicts agreeing with "
          f"`compare`: {same}/{len(agree)}", flush=True)  # fmt: skip
    return 0 if good == len(rows) == len(plan.hacks) + len(plan.benign) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
