"""Capability functions: `profile_run`, `profile_parse`, `profile_hotspots` (pure core; no CLI/MCP here)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.foundation.validation import require_file
from kernelpilot.host.toolchain import find_tool, require_tool, run
from kernelpilot.profile import ncu_csv, rocprof
from kernelpilot.profile.errors import ProfileFormatError
from kernelpilot.profile.hotspots import kernel_hotspots
from kernelpilot.profile.models import (
    HotspotsRequest,
    HotspotsResult,
    KernelProfile,
    ProfileParseRequest,
    ProfileResult,
    ProfileRunRequest,
)
from kernelpilot.profile.normalize import profile_from_details, profile_from_raw


def _sniff(path: Path, text: str) -> str:
    name = path.name
    if name.endswith(".ncu-rep"):
        return "ncu_rep"
    if name.endswith(".json") or text.lstrip().startswith("{"):
        return "rocprof_json"
    head = "\n".join(ln for ln in text.splitlines()[:50] if ln.startswith('"'))[:20000]
    if "Counter_Name" in head:
        return "rocprof_counters"
    if "Kernel_Name" in head and "Start_Timestamp" in head:
        return "rocprof_trace"
    if "Section Name" in head and "Metric Name" in head:
        return "ncu_details"
    if head.startswith('"ID"'):
        return "ncu_raw"
    ncu_csv.check_no_kernels(text)
    raise ProfileFormatError(
        f"{path}: cannot tell the format (not an ncu raw/details CSV, .ncu-rep, or rocprofv3 CSV/JSON)",
        "pass kind=... explicitly, or give the profiler's CSV/JSON output",
    )


_HEAD_BYTES = 1 << 20  # a full-set raw header is ~100 KB: the format is told from the first MiB


def _head_text(path: Path) -> str:
    """The first MiB of the file as text (for `_sniff`; the file is read whole only by the reader)."""
    with path.open("rb") as fh:
        return fh.read(_HEAD_BYTES).decode("utf-8", "replace")


def _finish(
    kernels: list[KernelProfile], req_kernel: str | None, **kw: object
) -> tuple[list[KernelProfile], list[str], int | None]:
    if req_kernel:
        kernels = [k for k in kernels if req_kernel in k.kernel]
    missing = sorted({m.split(" (")[0] for k in kernels for m in k.missing})
    passes = [k.passes for k in kernels if k.passes is not None]
    return kernels, missing, (max(passes) if passes else None)


def parse_text(
    text: str, kind: str, name: str, include_raw: bool
) -> tuple[str, list[KernelProfile], list[str]]:
    """Parse profiler output text of a known kind; returns (profiler, kernels, warnings)."""
    if kind == "ncu_raw":
        page = ncu_csv.parse_raw(text, name)
        return "ncu", [profile_from_raw(k, include_raw) for k in page.kernels], page.warnings
    if kind == "ncu_details":
        page = ncu_csv.parse_details(text, name)
        return "ncu", [profile_from_details(k, include_raw) for k in page.kernels], page.warnings
    if kind == "rocprof_trace":
        return "rocprofv3", rocprof.parse_kernel_trace(text, name), []
    if kind == "rocprof_counters":
        return "rocprofv3", rocprof.parse_counter_collection(text, name), []
    if kind == "rocprof_json":
        ks, w = rocprof.parse_json(text, name)
        return "rocprofv3", ks, w
    raise ProfileFormatError(f"unknown kind {kind!r}", "use one of ncu_raw, ncu_details, ncu_rep, rocprof_*")


def profile_parse(req: ProfileParseRequest) -> ProfileResult:
    path = require_file(req.path, "profile file", "give the path of the profiler output")
    if path.stat().st_size == 0:
        raise ProfileFormatError(
            f"{req.path}: file is empty (empty report)", "re-run the profiler; check its log"
        )
    kind: str = req.kind
    if kind == "auto" and not path.name.endswith(".ncu-rep"):
        kind = _sniff(path, _head_text(path))
    if kind == "ncu_raw":  # streamed: a 20,000-launch page is never held whole (ncu_csv.RawPage)
        page = ncu_csv.RawPage.from_file(path, req.path)
        kernels = [
            profile_from_raw(k, req.include_raw_metrics)
            for k in page
            if not req.kernel or req.kernel in k.kernel
        ]
        profiler, warnings = "ncu", page.warnings
    elif kind == "ncu_rep" or (kind == "auto" and path.name.endswith(".ncu-rep")):
        from kernelpilot.profile.ncu_runner import read_report

        profiler, kernels, warnings = parse_text(
            read_report(path, "raw"), "ncu_raw", req.path, req.include_raw_metrics
        )
    else:
        profiler, kernels, warnings = parse_text(
            ncu_csv.read_text(path), kind, req.path, req.include_raw_metrics
        )
    kernels, missing, passes = _finish(kernels, req.kernel)
    return ProfileResult(
        profiler="ncu" if profiler == "ncu" else "rocprofv3",
        path=req.path,
        kernels=kernels,
        passes=passes,
        warnings=warnings,
        missing=missing,
    )


def profile_run(req: ProfileRunRequest, progress: Progress = no_progress) -> ProfileResult:
    profiler = req.profiler
    if req.mode == "att":
        if profiler == "ncu":
            raise InvalidArgumentError(
                "mode=att is the rocprofv3 thread trace", "use profiler=rocprofv3 (or auto) with mode=att"
            )
        profiler = "rocprofv3"
    if profiler == "auto":
        profiler = "ncu" if find_tool("ncu") is not None or find_tool("rocprofv3") is None else "rocprofv3"
    if profiler == "ncu":
        from kernelpilot.profile.ncu_runner import passes_from_messages, run_ncu

        text, argv, wall, messages = run_ncu(req, progress)
        page = ncu_csv.parse_raw(text, "ncu stdout")
        kernels = [profile_from_raw(k, req.include_raw_metrics, "ncu raw page (live)") for k in page.kernels]
        kernels, missing, passes = _finish(kernels, None)
        if passes is None:
            passes = passes_from_messages(messages)
        return ProfileResult(
            profiler="ncu",
            path=req.export,
            kernels=kernels,
            passes=passes,
            command=argv,
            wall_s=wall,
            warnings=page.warnings,
            missing=missing,
        )
    if req.mode == "att":
        return _profile_run_att(req, progress)
    exe = str(require_tool("rocprofv3"))
    outdir = req.output_dir or tempfile.mkdtemp(prefix="kernelpilot-rocprof-")
    argv = rocprof.build_rocprof_argv(req, outdir, exe)
    progress(0, 2, "running rocprofv3")
    res = run(argv, timeout_s=req.timeout_s, cwd=req.workdir)
    progress(1, 2, "parsing")
    outs = rocprof.find_outputs(outdir)
    found: list[KernelProfile] = []
    warnings: list[str] = []
    for p in outs["counters"] or outs["trace"]:
        kind = "rocprof_counters" if p in outs["counters"] else "rocprof_trace"
        found += parse_text(p.read_text(), kind, str(p), False)[1]
    if not found:
        raise ProfileFormatError(
            f"rocprofv3 wrote no kernel trace/counter CSV under {outdir}",
            "check that the program launched GPU kernels and the kernel filter matches",
        )
    found, missing, _ = _finish(found, None)
    progress(2, 2, "done")
    return ProfileResult(
        profiler="rocprofv3",
        path=outdir,
        kernels=found,
        command=argv,
        wall_s=res.duration_s,
        warnings=warnings,
        missing=missing,
    )


def _profile_run_att(req: ProfileRunRequest, progress: Progress) -> ProfileResult:
    """rocprofv3 --att on the command, then the newest decoded dispatch folder through `profile att`."""
    from kernelpilot.profile.att.analysis import profile_att
    from kernelpilot.profile.att.capture import build_att_argv, newest_dispatch
    from kernelpilot.profile.att.models import AttRequest

    exe = str(require_tool("rocprofv3"))
    outdir = req.output_dir or tempfile.mkdtemp(prefix="kernelpilot-att-")
    argv = build_att_argv(req, outdir, exe)
    progress(0, 2, "running rocprofv3 --att")
    res = run(argv, timeout_s=req.timeout_s, cwd=req.workdir)
    progress(1, 2, "analysing the thread trace")
    folder = newest_dispatch(outdir)
    traces = sorted(Path(outdir).rglob("*kernel_trace.csv"), key=lambda p: p.stat().st_mtime_ns)
    att = profile_att(AttRequest(path=str(folder), kernel_trace=str(traces[-1]) if traces else None))
    progress(2, 2, "done")
    return ProfileResult(
        profiler="rocprofv3",
        path=str(folder),
        kernels=[],
        command=argv,
        wall_s=res.duration_s,
        warnings=att.warnings,
        att=att,
    )


def profile_hotspots(req: HotspotsRequest) -> HotspotsResult:
    path = require_file(req.path, "source page", "give an ncu source-page CSV or .ncu-rep")
    if path.name.endswith(".ncu-rep"):
        from kernelpilot.profile.ncu_runner import read_report

        text = read_report(path, "source", "cuda,sass")
        if "No lineinfo" in text and '"Address"' not in text:
            text = read_report(path, "source", "sass")
    else:
        text = ncu_csv.read_text(path)
    if not text.strip():
        raise ProfileFormatError(f"{req.path}: empty source page", "re-export it with --page source --csv")
    try:
        kernels, warnings = ncu_csv.parse_source(text, req.path)
    except ProfileFormatError as exc:
        msgs = [m for m in ncu_csv.profiler_messages(text) if "lineinfo" in m.lower()]
        if msgs:
            raise ProfileFormatError(
                f"{req.path}: {msgs[0]}",
                "compile with -lineinfo, or export the SASS-only view: --page source --print-source sass",
            ) from exc
        raise
    if req.kernel:
        kernels = [k for k in kernels if req.kernel in k.kernel]
    return HotspotsResult(
        path=req.path, kernels=[kernel_hotspots(k, req.top) for k in kernels], warnings=warnings
    )
