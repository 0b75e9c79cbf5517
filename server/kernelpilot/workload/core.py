"""The workload capabilities: `workload run` (capture + breakdown + drill-down), `read`, `diff`, `report`."""

from __future__ import annotations

import gc
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelpilot.foundation.atomic import output_path, write_text_atomic
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, KernelpilotError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.foundation.text import plain_errors
from kernelpilot.foundation.validation import require_file
from kernelpilot.workload.breakdown import breakdown, mark_hot
from kernelpilot.workload.models import (
    CaptureTarget,
    WorkloadDiffRequest,
    WorkloadDiffResult,
    WorkloadKernel,
    WorkloadReadRequest,
    WorkloadReportRequest,
    WorkloadReportResult,
    WorkloadResult,
    WorkloadRunRequest,
)
from kernelpilot.workload.opportunities import opportunities, retarget_isolate
from kernelpilot.workload.readers.trace import Trace


def _result(
    trace: Trace, hot_share: float, hot_cap: int, gpu: str | None
) -> tuple[WorkloadResult, list[WorkloadKernel]]:
    step, kernels, groups = breakdown(trace)
    hot = mark_hot(kernels, hot_share, hot_cap)
    res = WorkloadResult(
        source=trace.source,
        format=trace.format,
        method=trace.method,
        gpu=gpu or trace.gpu,
        notes=list(trace.notes),
        step=step,
        kernels=kernels,
        groups=groups,
        hot_share=hot_share,
    )
    return res, hot


def _check_outputs(req: WorkloadReadRequest | WorkloadRunRequest) -> None:
    """The output paths held to the policy of `foundation.atomic.output_path` before any work: a FIFO,
    device, directory or missing folder is refused before a capture of minutes, not after it."""
    for arg, path in (("--out", req.out), ("--html", req.html)):
        if path:
            output_path(path, arg, mkdir=req.mkdir)
    if isinstance(req, WorkloadRunRequest) and req.drill_csv:
        output_path(req.drill_csv, "--drill-csv", mkdir=req.mkdir)


def _write(res: WorkloadResult, req: WorkloadReadRequest | WorkloadRunRequest) -> None:
    if req.out:
        write_text_atomic(Path(req.out), res.model_dump_json(indent=1), arg="--out", mkdir=req.mkdir)
    if req.html:
        from kernelpilot.workload.views import render_html

        write_text_atomic(Path(req.html), render_html(res), arg="--html", mkdir=req.mkdir)


# What a trace read cannot do, said in its output (issue 42: the README promised a drill-down from a read).
TRACE_READ_LIMITS = (
    "a trace read drills into no kernel: a trace holds no code objects and no counters, so the drill and isa "
    "columns stay empty and no kernel-level cause is named (only the step's time, idle and fusion); "
    "next: `kernelpilot workload run STEP.py:make_step` (or `--command ... --region NAME`) captures the step "
    "and drills into the hot set (ISA facts, roofline position)"
)


def read_workload(req: WorkloadReadRequest) -> WorkloadResult:
    """A recorded trace into the breakdown and the opportunities it supports (no drill-down)."""
    from kernelpilot.workload.readers.detect import read_trace

    _check_outputs(req)
    enabled = gc.isenabled()
    gc.disable()  # millions of acyclic objects live until the end: collections would only rescan them
    try:
        trace = read_trace(req.path, req.format, req.steps, req.skip_steps)
        res, _ = _result(trace, req.hot_share, req.hot_cap, None)
        res.opportunities = opportunities(trace, res.step, res.kernels, res.gpu)
        res.notes.append(TRACE_READ_LIMITS)
        del trace
    finally:
        if enabled:
            gc.enable()
    _write(res, req)
    return res


def _join(res: WorkloadResult, hot: list[WorkloadKernel], meta: dict[str, Any], progress: Progress) -> None:
    """ISA facts of each hot kernel from the code objects the capture process had loaded (runner meta)."""
    from kernelpilot.workload.join import join_names, launch_facts_from_kineto, with_origins

    progress(2, 4, f"joining {len(hot)} hot kernels to the loaded code objects")
    objects = [Path(p) for p in meta.get("code_objects") or []]
    if not objects:
        res.notes.append(
            "ISA join skipped: " + str(meta.get("code_objects_error") or "the capture listed no code objects")
        )
        return
    blocks = {k.name: math.prod(k.block) for k in hot if k.block}
    facts = {k.name: launch_facts_from_kineto(k.launch_record) for k in hot if k.launch_record}
    try:
        joined = join_names([k.name for k in hot], objects, meta.get("arch"), blocks, facts)
    except KernelpilotError as exc:
        res.notes.append(f"ISA join failed: {exc}")
        return
    joined = with_origins(joined, dict(meta.get("code_object_origins") or {}))
    for k, j in zip(hot, joined, strict=True):
        k.isa = j.model_dump(mode="json")
        if not j.matched:
            res.unmatched.append(f"{k.short_name}: {j.note}")


def _one_row_per_name(res: WorkloadResult, hot: list[WorkloadKernel]) -> list[WorkloadKernel]:
    """ncu profiles a launch by kernel name: a name split over several shapes (one row each) is drilled once,
    for its row with the most time; the others keep the position computed from their recorded shapes."""
    first: dict[str, WorkloadKernel] = {}
    for k in hot:
        if k.name in first:
            res.drill_failures.append(
                f"{k.short_name}: not drilled: ncu profiles one launch per kernel name, that of "
                f"{first[k.name].short_name}; this row's position is computed from its recorded shapes"
            )
        else:
            first[k.name] = k
    return list(first.values())


def _drill(
    res: WorkloadResult,
    hot: list[WorkloadKernel],
    req: WorkloadRunRequest,
    gpu: str | None,
    progress: Progress,
) -> None:
    """One ncu launch per hot kernel (workload/drill.py); a kernel that fails keeps the breakdown."""
    from kernelpilot.workload.drill import DrillTarget, HotKernel, drill_hot

    devices = [k for k in hot if k.rule.startswith("device ")]  # Kineto memcpy/memset: no kernel to profile
    res.drill_failures += [f"{k.short_name}: a device copy/fill, not a kernel (not drilled)" for k in devices]
    hot = [k for k in hot if not k.rule.startswith("device ")]
    hot = _one_row_per_name(res, hot)
    if not hot:
        return
    progress(3, 4, f"profiling one launch of each of {len(hot)} hot kernels (ncu)")
    region = f"nvtx:{req.region}" if req.region else ("profiler" if req.command else None)
    target = DrillTarget(
        spec=req.spec,
        command=req.command,
        workdir=req.workdir,
        region=region,
        warmup_steps=req.skip_steps if req.command else req.warmup,  # a command's own warm-up steps
        timeout_s=req.timeout_s,
    )
    items = [
        HotKernel(
            name=k.name,
            launches_per_step=k.launches_per_step,
            us_per_step=k.us_per_step,
            symbol=(k.isa or {}).get("symbol"),
        )
        for k in hot
    ]
    try:
        results = drill_hot(target, items, gpu, progress, Path(req.drill_csv) if req.drill_csv else None)
    except KernelpilotError as exc:
        res.notes.append(f"drill-down failed for the whole hot set: {exc}")
        res.drill_failures = [f"{k.short_name}: {exc.message}" for k in hot]
        return
    for k, r in zip(hot, results, strict=True):
        k.drill = r.model_dump(mode="json", exclude={"profile"})
        if r.impossible:  # under the roofline floor: no headroom is computed from it (pct_of_attainable None)
            res.notes.append(f"{k.short_name}: {r.impossible}")
        if not r.ok:
            res.drill_failures.append(f"{k.short_name}: {r.error}")


def _capture_cubins(
    target: CaptureTarget, timeout_s: float, meta: dict[str, Any], names: list[str], outdir: Path
) -> None:
    """The cubins the step loads at run time (cuBLASLt, cuDNN), through CUPTI in a child of their own
    (workload/loaded_cubins.py); added to the code objects the join reads."""
    from kernelpilot.workload.loaded_cubins import add_to_meta, capture_loaded_cubins

    assert target.spec is not None  # only the closure path runs the step itself
    if not str(meta.get("arch") or "").startswith("sm_"):
        return  # CUPTI is NVIDIA's: a HIP capture's code objects are all in mapped libraries or files
    cap = capture_loaded_cubins(target.spec, target.workdir, target.factory_kwargs, names, outdir, timeout_s)
    add_to_meta(meta, cap)


def _shares(res: WorkloadResult, hot: list[WorkloadKernel]) -> None:
    """The hot set's GPU time with ISA facts (from code objects, from launch records) and a roofline."""
    hot_us = sum(k.us_per_step for k in hot) or 1.0

    def share(facts: tuple[str, ...]) -> float:
        return sum(k.us_per_step for k in hot if (k.isa or {}).get("facts") in facts) / hot_us

    res.isa_joined_share = share(("code object", "trace"))
    res.isa_code_object_share = share(("code object",))
    res.isa_trace_share = share(("trace",))
    res.drilled_share = (
        sum(k.us_per_step for k in hot if (k.drill or {}).get("pct_of_attainable") is not None) / hot_us
    )


def _remedies(
    res: WorkloadResult, req: WorkloadRunRequest, target: CaptureTarget, progress: Progress
) -> None:
    """--try-remedies: measure the launch-overhead remedies on the step (workload/remedies.py), or say why
    they were not tried."""
    from kernelpilot.workload.remedies import estimate_of, run_remedies, why_not

    why = why_not(res, req.spec)
    if why is not None:
        res.notes.append(f"remedies not tried: {why}")
        return
    progress(4, 5, "trying the launch-overhead remedies (CUDA graph, torch.compile reduce-overhead)")
    res.remedies = run_remedies(target, estimate_of(res.opportunities), req.remedies_timeout_s)


def run_workload(req: WorkloadRunRequest, progress: Progress = no_progress) -> WorkloadResult:
    """Capture `steps` steady-state steps, break them down, drill into the hot set, rank opportunities."""
    from kernelpilot.workload.capture import capture_closure, capture_command

    if bool(req.spec) == bool(req.command):
        raise InvalidArgumentError(
            "give exactly one of spec (a step factory) and command",
            "e.g. kernelpilot workload run model.py:make_decode",
        )
    if req.skip_steps and not (req.command and req.region):
        raise InvalidArgumentError(
            f"skip_steps={req.skip_steps} applies to a command with a region (NVTX range instances to skip)",
            "a step factory skips its warm-up with warmup; a command gives region too, e.g. --region step",
        )
    _check_outputs(req)
    t0 = time.perf_counter()
    target = CaptureTarget(
        spec=req.spec,
        command=req.command,
        workdir=req.workdir,
        warmup=req.warmup,
        region=req.region,
        skip_steps=req.skip_steps,
    )
    # the folder lives until the join has read the cubins the module capture wrote into it
    with tempfile.TemporaryDirectory(prefix="kernelpilot-workload-") as tmp:
        progress(0, 4, f"capturing {req.steps} steps")
        cap = (capture_closure if req.spec else capture_command)(target, req.steps, Path(tmp), req.timeout_s)
        if req.save_trace and cap.trace_path is not None:
            shutil.copyfile(cap.trace_path, req.save_trace)
        if req.drill and req.spec:
            progress(0, 4, "capturing the cubins the step loads at run time (CUPTI)")
            names = [a.name for a in cap.trace.activities]
            _capture_cubins(target, req.timeout_s, cap.meta, names, Path(tmp) / "cubins")
        progress(1, 4, "breaking the steps down")
        gpu = req.gpu or cap.meta.get("gpu") or cap.trace.gpu
        res, hot = _result(cap.trace, req.hot_share, req.hot_cap, gpu)
        res.notes += cap.meta.get("loaded_cubins_notes") or []
        if cap.meta.get("event_step_median_us") is not None:
            res.step.event_step_us = float(cap.meta["event_step_median_us"])
        res.source = req.spec or " ".join(req.command or [])
        res.trace_path = req.save_trace
        if req.drill:
            _join(res, hot, cap.meta, progress)
    if req.drill:
        _drill(res, hot, req, gpu, progress)
        _shares(res, hot)
    res.opportunities = opportunities(cap.trace, res.step, res.kernels, gpu)
    retarget_isolate(res.opportunities, cap.trace.source, req.save_trace)
    if req.try_remedies:
        _remedies(res, req, target, progress)
    res.wall_s = time.perf_counter() - t0
    progress(4, 4, "done")
    _write(res, req)
    return res


def load_result(path: str) -> WorkloadResult:
    p = require_file(path, "workload result", "give a JSON of workload run/read --out")
    from pydantic import ValidationError

    try:
        return WorkloadResult.model_validate_json(p.read_bytes())
    except ValidationError as exc:
        raise InputFileError(
            f"{path!r} is not a workload result: {plain_errors(exc.errors())}",
            "give the JSON that workload run/read wrote with --out",
        ) from exc


def diff_workload(req: WorkloadDiffRequest) -> WorkloadDiffResult:
    from kernelpilot.workload.diff import diff_results

    return diff_results(load_result(req.a), load_result(req.b), req)


def report_workload(req: WorkloadReportRequest) -> WorkloadReportResult:
    from kernelpilot.workload.views import render_html

    output_path(req.out, "--out", mkdir=req.mkdir)
    html = render_html(load_result(req.path))
    write_text_atomic(Path(req.out), html, arg="--out", mkdir=req.mkdir)
    return WorkloadReportResult(
        path=req.out, bytes=len(html.encode()), sections=["breakdown", "cumulative", "opportunities"]
    )
