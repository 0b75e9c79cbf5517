"""Drill into the hot kernels of a workload: one profiler process, one steady-state launch of each.

Why: a breakdown says where the time goes; whether a kernel can get faster needs its position on the
roofline (achieved FLOP/s and bytes/s against the cited roofs) and its bound class. Profiling every launch
of a step costs minutes (ncu replays each launch ~17 times), so each hot kernel gets exactly one launch:

- ncu's `--kernel-id ::regex:<names>:<N>` profiles the N-th invocation *of each* kernel the regex matches
  (Nsight Compute "Training", Filter Options, example "Profile only 2nd invocation of all kernels which
  have Bar in name"). N is chosen past the warm-up of every hot kernel: N = max(warm-up steps x launches per
  step) + 1, and a closure target runs enough steps for the least frequent kernel to reach it. Inside a
  region (NVTX include, or cudaProfilerStart/Stop with `--profile-from-start off`) N = 1 is each kernel's
  first launch there. ncu takes one `--kernel-id` only. All checked on the H100 with ncu 2025.3
  (tests/fixtures/workload/join/gpu/ncu_filter_*, tests/workload/test_gpu_records.py).
- names are matched in their mangled form (`--kernel-name-base mangled`), which has no `::` for the
  kernel-id syntax to split on: see `plan_filters`.
- metrics: `profile.metrics.roofline_metrics` (duration, DRAM bytes, FLOPs by precision, SOL %) and the
  device's name (for its wiki peaks).

Each profiled launch goes through `profile.normalize` and `bottleneck.classify_profile`; the roofs are the
wiki's cited peaks for the GPU. A kernel that got no profiled launch (never reached, replay failed, the
program died) gets a result with `ok=False` naming it and why; the others keep theirs.

The closure runner (`python -m kernelpilot.workload.drill --spec ...`) lives here too: it is what ncu runs.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kernelpilot.foundation.errors import InvalidArgumentError, KernelpilotError, ToolFailedError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.profile.models import KernelProfile
from kernelpilot.workload.names import full_key, name_keys

# flop_count key (profile.normalize) -> the wiki metric of the roof that precision runs against
PEAK_OF_PRECISION = {
    "fp32": "fp32_vector_tflops",
    "fp16": "fp16_vector_tflops",
    "fp64": "fp64_vector_tflops",
    "tensor_bf16": "bf16_dense_tflops",
    "tensor_fp16": "fp16_dense_tflops",
    "tensor_tf32": "tf32_dense_tflops",
    "tensor_fp8": "fp8_dense_tflops",
    "tensor_fp64": "fp64_matrix_tflops",
    "tensor_int8": "int8_dense_tops",
    "matrix_f16": "fp16_dense_tflops",
    "matrix_bf16": "bf16_dense_tflops",
    "matrix_f32": "fp32_matrix_tflops",
    "matrix_f64": "fp64_matrix_tflops",
}
MEMORY_PEAK = "memory_bandwidth_tb_s"
DEVICE_NAME = "device__attribute_display_name"  # the GPU's name, for its wiki peaks
_REGEX_SPECIAL = re.compile(r"([\\^$.|?*+()\[\]{}])")  # ECMAScript regex metacharacters (ncu's regex)
_MANGLED_SAFE = re.compile(r"^[A-Za-z0-9_$.]+$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class DrillTarget(BaseModel):
    """What to run under the profiler: a closure factory (as `kernelpilot time` takes it) or a command."""

    spec: str | None = Field(None, description="closure factory 'module:function' or 'path/file.py:function'")
    command: list[str] | None = Field(None, description="instead of spec: the program as an argv list")
    workdir: str = Field(".", description="where the program runs / the spec is resolved from")
    region: str | None = Field(
        None, description="command only: 'nvtx:<range name>' or 'profiler' (cudaProfilerStart/Stop)"
    )
    warmup_steps: int = Field(
        2, ge=0, description="steps (closure calls, or NVTX range instances) before the profiled launches"
    )
    timeout_s: float = Field(300.0, gt=0, description="kill the profiler after this many seconds")


class HotKernel(BaseModel):
    name: str = Field(description="the kernel name as the trace spelled it")
    launches_per_step: float = Field(gt=0)
    us_per_step: float | None = None
    symbol: str | None = Field(None, description="the code object's (mangled) symbol, from workload.join")


class DrillResult(BaseModel):
    """One hot kernel's profiled launch and its roofline position (None = not measured). As ncu measures
    by default (`--cache-control all`), caches are flushed before the launch: DRAM bytes are the launch's
    cold working set, and its time may exceed the trace's warm per-launch time."""

    name: str
    ok: bool
    error: str = Field("", description="when not ok: which kernel and why")
    launch_id: int | None = None
    duration_us: float | None = None
    flop: float | None = Field(None, description="FLOPs of the launch, all precisions")
    dram_bytes: float | None = None
    achieved_flop_per_s: float | None = None
    achieved_bytes_per_s: float | None = None
    arithmetic_intensity: float | None = Field(None, description="FLOP per DRAM byte")
    roof: str | None = Field(None, description="compute | memory: the roof that applies at this intensity")
    bound: str | None = Field(None, description="bottleneck verdict (compute_bound, memory_bound, ...)")
    attainable_flop_per_s: float | None = Field(None, description="min(compute peak, bandwidth x intensity)")
    attainable_us: float | None = Field(
        None, description="time at the roofs: max(FLOPs_p / peak_p over precisions, bytes / bandwidth)"
    )
    pct_of_attainable: float | None = Field(
        None, description="100 x attainable_us / duration_us; None when the launch is under its floor"
    )
    impossible: str | None = Field(
        None, description="set when the launch ran under its roofline floor: what to check (roofline.stop)"
    )
    citations: list[str] = Field(default_factory=list, description="the wiki peaks used")
    note: str = ""
    profile: KernelProfile | None = None


def drill_hot(
    target: DrillTarget,
    hot: list[HotKernel],
    gpu: str | None = None,
    progress: Progress = no_progress,
    raw_csv: Path | None = None,
) -> list[DrillResult]:
    """Profile one steady-state launch of each hot kernel in one ncu process (rocprofv3 where only it is
    installed); one result per kernel, in order. Raises typed errors for a missing profiler, refused
    counters or a bad target. `raw_csv`: also keep the profiler's CSV there (the record of the run)."""
    if not hot:
        return []
    _check_target(target)
    kernels = [h for h in hot if not _is_transfer(h.name)]
    results_by_name: dict[str, DrillResult] = {
        h.name: DrillResult(
            name=h.name,
            ok=False,
            error=f"{h.name}: a copy or fill, not a kernel: profilers drill kernels only",
        )
        for h in hot
        if _is_transfer(h.name)
    }
    device = None
    if kernels:
        amd = _use_rocprof()
        plan = plan_rocprof(target, kernels) if amd else plan_filters(target, kernels)
        tool = "rocprofv3" if amd else "ncu"
        progress(0, 3, f"{tool}: one launch of each of {len(kernels)} hot kernels")
        if amd:
            profiles, failure, device = _run_rocprof(target, plan, raw_csv)
        else:
            text, failure = _run_ncu(target, plan)
            if raw_csv is not None:
                from kernelpilot.foundation.atomic import write_text_atomic

                write_text_atomic(raw_csv, text, arg="--drill-csv", mkdir=True)  # checked before the run
            profiles = _profiles(text)
        progress(2, 3, "reading the profiles")
        results_by_name.update((h.name, _result(h, plan, profiles, failure)) for h in kernels)
    results = [results_by_name[h.name] for h in hot]
    _add_roofline(results, gpu or device)
    progress(3, 3, "drill-down done")
    return results


def _is_transfer(name: str) -> bool:
    """Kineto names copies and fills `Memcpy HtoD (...)` / `Memset (Device)`: no kernel to profile."""
    return name.startswith(("Memcpy ", "Memset ", "memcpy", "memset"))


def _check_target(t: DrillTarget) -> None:
    if (t.spec is None) == (t.command is None):
        raise InvalidArgumentError(
            "give exactly one of spec (module:function) or command (argv list)",
            "e.g. spec='step.py:make_step' or command=['python3', 'step.py']",
        )
    if t.command is not None and not t.command:
        raise InvalidArgumentError("command is empty", "give the program and its arguments")
    if t.region is not None and t.spec is not None:
        raise InvalidArgumentError(
            "region applies to a command; a closure's steps are its calls",
            "drop region, or use warmup_steps to skip steps",
        )
    if t.region is not None and not (t.region == "profiler" or t.region.startswith("nvtx:")):
        raise InvalidArgumentError(
            f"region {t.region!r} is not 'nvtx:<range name>' or 'profiler'",
            "name the NVTX range the step runs in, or use cudaProfilerStart/Stop",
        )


class FilterPlan(BaseModel):
    """How the profiler picks one launch per hot kernel, and how its rows map back to the hot kernels."""

    base: str  # "mangled" (ncu) | "rocprofv3"
    pattern: str  # regex over the names in that base
    invocation: int  # N: profile the N-th invocation of each matching kernel
    steps: int  # closure target: calls to run in all
    keys: dict[str, int]  # name as the profiler prints it -> index into hot (exact matches)
    loose: dict[str, int] = {}  # normalized name -> index into hot (kernels matched by their own name)


def plan_filters(target: DrillTarget, hot: list[HotKernel]) -> FilterPlan:
    """The ncu filter for one steady-state launch of each hot kernel (see the module docstring).

    ncu matches mangled names: exact for a kernel with its symbol (from `workload.join`) or a plain name
    (extern "C", Triton, cuBLAS's nvjet); otherwise any Itanium symbol holding the kernel's own identifier
    (`_Z.*29vectorized_elementwise_kernel.*`), its rows told apart by their demangled names afterwards.
    ncu's own demangled spelling is not used: on the H100 it printed `void step_kernel<1>(float *)` for
    `kpf::step_kernel<1>(float*)` and `unnamed>::anon_kernel(float *)`, and a demangled-base filter
    matched nothing (tests/fixtures/workload/join/gpu/ncu_filter_E_demangled_inv7.csv)."""
    parts: list[str] = []
    keys: dict[str, int] = {}
    loose: dict[str, int] = {}
    for i, h in enumerate(hot):
        exact = h.symbol or (h.name if _MANGLED_SAFE.match(h.name) else None)
        if exact is not None:
            parts.append(_escape(exact))
            keys[exact] = i
            continue
        k = name_keys(h.name)
        if not _WORD.fullmatch(k.own):
            continue  # no filter can name it: its result says so
        parts.append(f"_Z.*{len(k.own)}{_escape(k.own)}.*")
        loose[k.full] = i
    if target.region == "profiler":  # the program's cudaProfilerStart/Stop region is its steady state
        invocation = 1
    else:  # closure calls, or instances of the NVTX range (one per step): past the warm-up steps
        invocation = max(math.floor(target.warmup_steps * h.launches_per_step) for h in hot) + 1
    # a closure target runs this many calls; a command runs its own steps
    steps = 1 if target.region else max(math.ceil(invocation / h.launches_per_step) for h in hot)
    return FilterPlan(
        base="mangled",
        pattern="^(" + "|".join(parts) + ")$",
        invocation=invocation,
        steps=steps,
        keys=keys,
        loose=loose,
    )


def _escape(text: str) -> str:
    """`text` as a literal in ncu's (ECMAScript) regex: only metacharacters get a backslash."""
    return _REGEX_SPECIAL.sub(r"\\\1", text)


def ncu_filter_args(plan: FilterPlan, region: str | None) -> list[str]:
    args = [
        "--kernel-name-base",
        plan.base,
        "--print-kernel-base",
        plan.base,
        "--kernel-id",
        f"::regex:{plan.pattern}:{plan.invocation}",
    ]
    if region is not None and region.startswith("nvtx:"):
        args += ["--nvtx", "--nvtx-include", region[len("nvtx:") :] + "/"]
    return args


def _command(target: DrillTarget, plan: FilterPlan) -> list[str]:
    if target.command is not None:
        return list(target.command)
    return [
        sys.executable,
        "-m",
        "kernelpilot.workload.drill",
        "--spec",
        target.spec or "",
        "--workdir",
        str(Path(target.workdir).resolve()),
        "--steps",
        str(target.warmup_steps + plan.steps),
    ]


def _run_ncu(target: DrillTarget, plan: FilterPlan) -> tuple[str, str]:
    """(raw-page CSV text, failure) — failure names why the run ended early ("" when it did not)."""
    from kernelpilot.host.toolchain import require_tool, run
    from kernelpilot.profile.errors import ProfilerError
    from kernelpilot.profile.models import ProfileRunRequest
    from kernelpilot.profile.ncu_runner import build_ncu_argv, check_messages

    ncu = str(require_tool("ncu"))
    from kernelpilot.profile.metrics import roofline_metrics

    req = ProfileRunRequest(
        command=_command(target, plan),
        mode="metrics",
        metrics=[*roofline_metrics(), DEVICE_NAME],
        launch_count=None,
        profile_from_start=target.region != "profiler",
        timeout_s=target.timeout_s,
        workdir=target.workdir,
    )
    argv = build_ncu_argv(req, ncu, extra=ncu_filter_args(plan, target.region))
    env = _child_env()
    res = run(argv, timeout_s=target.timeout_s, cwd=target.workdir, env=env, check=False)
    try:
        check_messages(res)  # PermissionDeniedError (counters refused) propagates: nothing was profiled
    except ToolFailedError as exc:  # the program died: keep what was profiled before
        return res.stdout, f"{exc.message}: {(exc.stderr_tail or '')[-400:]}"
    except ProfilerError as exc:  # ncu's own ==ERROR== lines (e.g. one kernel's replay failed)
        return res.stdout, exc.message
    return res.stdout, ""


def _child_env() -> dict[str, str]:
    """The profiled closure runner must import this kernelpilot: its package root goes on PYTHONPATH."""
    import os

    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _profiles(text: str) -> list[KernelProfile]:
    from kernelpilot.profile.errors import NoKernelsProfiledError, ProfileFormatError
    from kernelpilot.profile.ncu_csv import parse_raw
    from kernelpilot.profile.normalize import profile_from_raw

    try:
        page = parse_raw(text, "ncu raw page (drill)")
    except (NoKernelsProfiledError, ProfileFormatError):
        return []
    return [profile_from_raw(k, True, "ncu raw page (workload drill)") for k in page.kernels]


def _result(h: HotKernel, plan: FilterPlan, profiles: list[KernelProfile], failure: str) -> DrillResult:
    mine = [p for p in profiles if _is_row_of(h, p.kernel, plan)]
    if not mine and plan.base == "mangled" and not _in_plan(h, plan):
        return DrillResult(name=h.name, ok=False, error=f"{h.name}: no profiler filter can name this kernel")
    if not mine:
        why = failure or (
            f"no launch was profiled: its invocation {plan.invocation} was never reached "
            f"({plan.steps} step(s) after the warm-up) or ncu's name filter did not match"
        )
        return DrillResult(name=h.name, ok=False, error=f"{h.name}: {why}")
    p = mine[0]
    flop = sum(p.flop_count.values()) if p.flop_count else None
    dram = p.bytes_dram()
    dur_us = p.duration_ns / 1e3 if p.duration_ns else None
    secs = p.duration_ns * 1e-9 if p.duration_ns else None
    return DrillResult(
        name=h.name,
        ok=True,
        launch_id=p.launch_id,
        duration_us=dur_us,
        flop=flop,
        dram_bytes=dram,
        achieved_flop_per_s=flop / secs if flop is not None and secs else None,
        achieved_bytes_per_s=dram / secs if dram is not None and secs else None,
        arithmetic_intensity=(flop / dram) if flop is not None and dram else None,
        profile=p,
    )


def _is_row_of(h: HotKernel, printed: str, plan: FilterPlan) -> bool:
    """Whether a profiled row (its name as the profiler printed it) is a launch of hot kernel `h`."""
    if plan.base == "rocprofv3":
        return name_keys(printed).no_params == name_keys(h.name).no_params
    exact = h.symbol or (h.name if _MANGLED_SAFE.match(h.name) else None)
    if exact is not None:
        return printed == exact
    return printed.startswith("_Z") and full_key(printed) == name_keys(h.name).full


def _in_plan(h: HotKernel, plan: FilterPlan) -> bool:
    exact = h.symbol or (h.name if _MANGLED_SAFE.match(h.name) else None)
    return exact in plan.keys if exact is not None else name_keys(h.name).full in plan.loose


# ---------------------------------------------------------------- AMD: rocprofv3 counters

# One --pmc group (rocprofv3 runs one pass per group without kernel replay): DRAM bytes (FETCH_SIZE and
# WRITE_SIZE, derived counters in KiB) and FLOPs (matrix ops and FP32 VALU ops), read into a KernelProfile by
# `profile.rocprof.parse_counter_collection`. Not run on AMD hardware here: no AMD GPU was lent; a set that
# does not fit one pass makes rocprofv3 fail, and the drill then reports its message for every kernel.
AMD_COUNTERS = (
    "FETCH_SIZE",
    "WRITE_SIZE",
    "SQ_INSTS_VALU_MFMA_MOPS_BF16",
    "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "SQ_INSTS_VALU_ADD_F32",
    "SQ_INSTS_VALU_MUL_F32",
    "SQ_INSTS_VALU_FMA_F32",
    "SQ_INSTS_VALU_TRANS_F32",
)


def _use_rocprof() -> bool:
    from kernelpilot.host.toolchain import find_tool

    return find_tool("ncu") is None and find_tool("rocprofv3") is not None


def plan_rocprof(target: DrillTarget, hot: list[HotKernel]) -> FilterPlan:
    """rocprofv3's filter: kernels whose name holds a hot kernel's own identifier, each at its N-th
    dispatch (`--kernel-iteration-range [N]` counts per kernel, like ncu's kernel-id invocation)."""
    if target.region is not None:
        raise InvalidArgumentError(
            "the rocprofv3 drill takes no region", "drop region; warmup_steps sets the steady state"
        )
    base = plan_filters(target, hot)
    owns = sorted({name_keys(h.name).own for h in hot})
    return FilterPlan(
        base="rocprofv3",
        pattern="(" + "|".join(_escape(o) for o in owns) + ")",
        invocation=base.invocation,
        steps=base.steps,
        keys={name_keys(h.name).no_params: i for i, h in enumerate(hot)},
    )


def rocprof_argv(target: DrillTarget, plan: FilterPlan, exe: str, outdir: str) -> list[str]:
    return [
        exe,
        "--kernel-trace",
        "--pmc",
        *AMD_COUNTERS,
        "--kernel-include-regex",
        plan.pattern,
        "--kernel-iteration-range",
        f"[{plan.invocation}]",
        "-d",
        outdir,
        "-o",
        "kp",
        "--output-format",
        "csv",
        "--",
        *_command(target, plan),
    ]


def _run_rocprof(
    target: DrillTarget, plan: FilterPlan, raw_csv: Path | None
) -> tuple[list[KernelProfile], str, str | None]:
    """(profiles, failure, GPU product name) of one rocprofv3 run."""
    import shutil
    import tempfile

    from kernelpilot.foundation.errors import PermissionDeniedError
    from kernelpilot.host.toolchain import require_tool, run
    from kernelpilot.profile import rocprof

    outdir = tempfile.mkdtemp(prefix="kernelpilot-drill-")
    try:
        argv = rocprof_argv(target, plan, str(require_tool("rocprofv3")), outdir)
        res = run(argv, timeout_s=target.timeout_s, cwd=target.workdir, env=_child_env(), check=False)
        text = res.stdout + res.stderr
        if re.search(r"permission denied|not permitted|perf_event_paranoid", text, re.I) and res.returncode:
            raise PermissionDeniedError(
                "rocprofv3 was refused access to the GPU's performance counters",
                "run as a user in the 'render'/'video' groups, or as root",
            )
        failure = "" if res.returncode == 0 else f"rocprofv3 exited with code {res.returncode}: {text[-400:]}"
        outs = rocprof.find_outputs(outdir)
        profiles: list[KernelProfile] = []
        for p in outs["counters"]:
            text = p.read_text()
            if raw_csv is not None:
                from kernelpilot.foundation.atomic import write_text_atomic

                write_text_atomic(raw_csv, text, arg="--drill-csv", mkdir=True)  # checked before the run
            profiles += rocprof.parse_counter_collection(text, str(p))
        return profiles, failure, _amd_product(Path(outdir))
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def _amd_product(outdir: Path) -> str | None:
    """The GPU's product name from rocprofv3's agent_info CSV (for its wiki peaks)."""
    import csv

    for p in outdir.rglob("*agent_info.csv"):
        with p.open(newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("Agent_Type") == "GPU" and row.get("Product_Name"):
                    return row["Product_Name"]
    return None


def _add_roofline(results: list[DrillResult], gpu: str | None) -> None:
    """Roofline position and bound class of every profiled kernel, from the wiki's cited peaks."""
    from kernelpilot.wiki.core import load_wiki

    done = [r for r in results if r.ok and r.profile is not None]
    if not done:
        return
    wiki = load_wiki()
    name = gpu or next(
        (
            str(r.profile.raw_metrics[DEVICE_NAME])
            for r in done
            if r.profile and r.profile.raw_metrics.get(DEVICE_NAME)
        ),
        None,
    )
    try:
        if name is None:
            raise InvalidArgumentError("the profile names no device", "pass gpu (e.g. H100)")
        gpu_id = wiki.resolve_gpu(name)
    except KernelpilotError as exc:
        for r in done:
            r.note = f"no roofline: {exc.message}"
        return
    for r in done:
        _position(r, wiki, gpu_id)


def _position(r: DrillResult, wiki: object, gpu_id: str) -> None:
    from kernelpilot.bottleneck.classify import classify_profile
    from kernelpilot.bottleneck.models import CitedPeak
    from kernelpilot.roofline.stop import below_floor
    from kernelpilot.wiki.core import Wiki

    assert isinstance(wiki, Wiki) and r.profile is not None
    p = r.profile
    mem = wiki.get(gpu_id, MEMORY_PEAK)
    if mem is None or not p.duration_ns:
        r.note = f"no roofline: {MEMORY_PEAK} not in the wiki for {gpu_id}" if mem is None else "no duration"
        return
    bw = mem.number() * 1e12
    times = {"memory": (r.dram_bytes or 0.0) / bw}
    cites = [mem.citation()]
    best_peak = 0.0
    for prec, flops in p.flop_count.items():
        cv = wiki.get(gpu_id, PEAK_OF_PRECISION.get(prec, ""))
        if cv is None or flops <= 0:
            continue
        peak = cv.number() * 1e12
        times[prec] = flops / peak
        cites.append(cv.citation())
        if times[prec] >= max((t for k, t in times.items() if k != "memory"), default=0.0):
            best_peak = peak
    floor = max(times.values())
    r.citations = cites
    r.attainable_us = floor * 1e6
    compute_t = max((t for k, t in times.items() if k != "memory"), default=0.0)
    roof: Literal["compute", "memory"] = "compute" if compute_t > times["memory"] else "memory"
    r.roof = roof
    below = below_floor(p.duration_ns / 1e3, r.attainable_us, roof, "ncu gpu__time_duration")
    r.impossible = below.message if below is not None else None
    r.pct_of_attainable = None if below is not None else 100.0 * r.attainable_us / (p.duration_ns / 1e3)
    if r.arithmetic_intensity is not None and best_peak:
        r.attainable_flop_per_s = min(best_peak, bw * r.arithmetic_intensity)
    peaks = [CitedPeak(metric=mem.metric, value=mem.number(), unit=mem.unit, citation=mem.citation())]
    verdict = classify_profile(p, f"ncu launch {p.launch_id}", peaks)
    r.bound = verdict.verdict


def _run_closure(spec: str, workdir: str, steps: int) -> None:
    """What ncu profiles for a closure target: build the closure, call it `steps` times, synchronize."""
    import importlib

    from kernelpilot.timing.callables import build_closures, load_factory
    from kernelpilot.timing.errors import CallableError

    closures = build_closures(load_factory(spec, Path(workdir)), 1)
    try:
        for i in range(steps):
            closures[i % len(closures)]()
    except Exception as exc:  # the user's closure raised: report it typed, the drill names the kernels
        raise CallableError(f"the closure raised {type(exc).__name__}: {exc}", "fix the closure") from exc
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        torch = importlib.import_module("torch")
        if torch.cuda.is_available():
            torch.cuda.synchronize()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="run a closure factory N times (the workload drill's target)")
    ap.add_argument("--spec", required=True)
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--steps", type=int, required=True)
    a = ap.parse_args(argv)
    try:
        _run_closure(a.spec, a.workdir, a.steps)
    except KernelpilotError as exc:
        print(f"kernelpilot drill target: {exc.message} ({exc.hint})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
