"""rocprofv3: argv builder and parsers for its kernel-trace CSV, counter-collection CSV and JSON output.

Kernel-trace columns (rocprofv3 1.x): Kind, Agent_Id, Queue_Id, ..., Dispatch_Id, Kernel_Id, Kernel_Name,
Correlation_Id, Start_Timestamp, End_Timestamp (ns), LDS_Block_Size, Scratch_Size, VGPR_Count,
Accum_VGPR_Count, SGPR_Count, Workgroup_Size_X/Y/Z, Grid_Size_X/Y/Z (work-items).
Counter-collection CSV: one row per (dispatch, counter) with Counter_Name / Counter_Value.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.profile.errors import ProfileFormatError
from kernelpilot.profile.models import KernelProfile, ProfileRunRequest
from kernelpilot.profile.units import parse_number

# FETCH_SIZE / WRITE_SIZE are in kilobytes of 1024 bytes (ROCm rocprofv3 counter docs, "FETCH_SIZE: total
# kilobytes fetched from video memory", https://rocm.docs.amd.com/projects/rocprofiler-sdk/ ).
_KB = 1024.0
_NO_COUNTERS = "kernel trace has no counters: collect --pmc FETCH_SIZE WRITE_SIZE SQ_INSTS_VALU_*"
# VALU FLOP counters: lanes per wavefront-instruction and MFMA ops per MOPS unit, from the ROCm Compute
# Profiler (rocprof-compute) metric definitions, "VALU FLOPs" / "MFMA FLOPs", https://rocm.docs.amd.com/projects/rocprofiler-compute/
_VALU_LANES = 64.0
_MFMA_OPS_PER_MOPS = 512.0


def build_rocprof_argv(req: ProfileRunRequest, outdir: str, exe: str = "rocprofv3") -> list[str]:
    if not req.command:
        raise InvalidArgumentError("command is empty", "give the program to profile and its arguments")
    argv = [exe, "--kernel-trace"]
    if req.metrics:
        argv += ["--pmc", *req.metrics]
    if req.mode == "full":
        argv += ["--stats"]
    if req.kernel_name:
        name = req.kernel_name[len("regex:") :] if req.kernel_name.startswith("regex:") else req.kernel_name
        argv += ["--kernel-include-regex", name]
    argv += ["-d", outdir, "-o", "kp", "--output-format", "csv", "json"]
    return [*argv, "--", *req.command]


def _rows(text: str, source_name: str) -> list[dict[str, str]]:
    """The CSV's rows as dicts; every row must have the header's columns (a short row is a cut file)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        body = list(reader)
    except csv.Error as exc:
        raise ProfileFormatError(
            f"{source_name}: not a readable CSV (line {reader.line_num}: {exc})",
            "give the rocprofv3 CSV as it wrote it (a cut or edited file cannot be read)",
        ) from None
    if header is None or not body:
        raise ProfileFormatError(f"{source_name}: no CSV rows", "give a non-empty rocprofv3 CSV output")
    rows: list[dict[str, str]] = []
    for n, cells in enumerate(body, start=2):
        if not cells:
            continue
        if len(cells) != len(header):
            raise ProfileFormatError(
                f"{source_name}: row {n} has {len(cells)} cells, the header has {len(header)} "
                "(truncated or corrupt file)",
                "re-run rocprofv3, or give the complete CSV",
            )
        rows.append(dict(zip(header, cells, strict=True)))
    if not rows:
        raise ProfileFormatError(f"{source_name}: no CSV rows", "give a non-empty rocprofv3 CSV output")
    return rows


def _check_names(rows: list[dict[str, str]], source_name: str) -> None:
    for n, r in enumerate(rows, start=2):
        if not r["Kernel_Name"].strip():
            raise ProfileFormatError(
                f"{source_name}: row {n} has an empty Kernel_Name", "give the rocprofv3 CSV as it wrote it"
            )


def _f(row: dict[str, str], *names: str) -> float | None:
    for n in names:
        if n in row and row[n] is not None:
            v = parse_number(row[n])
            if v is not None:
                return v
    return None


def _dims(row: dict[str, str], prefix: str) -> list[int] | None:
    vals = [_f(row, f"{prefix}_{a}") for a in ("X", "Y", "Z")]
    if all(v is not None for v in vals):
        return [int(v) for v in vals if v is not None]
    single = _f(row, prefix)
    return [int(single)] if single is not None else None  # parse_number gives finite floats only


def _from_dispatch_row(
    r: dict[str, str],
    launch_id: int | None,
    source: str,
    start: float | None,
    end: float | None,
    missing: list[str],
) -> KernelProfile:
    """One dispatch row (kernel-trace or counter-collection CSV: same columns) as a KernelProfile."""
    return KernelProfile(
        kernel=r["Kernel_Name"],
        launch_id=launch_id,
        profiler="rocprofv3",
        source=source,
        device=r.get("Agent_Id"),
        grid=_dims(r, "Grid_Size"),
        block=_dims(r, "Workgroup_Size"),
        grid_unit="work_items",
        duration_ns=(end - start) if start is not None and end is not None else None,
        registers_per_thread=_f(r, "VGPR_Count", "Arch_VGPR_Count"),
        accum_vgpr_count=_f(r, "Accum_VGPR_Count"),
        sgpr_count=_f(r, "SGPR_Count"),
        shared_mem_per_block_bytes=_f(r, "LDS_Block_Size", "LDS_Size"),
        scratch_bytes_per_thread=_f(r, "Scratch_Size"),
        missing=missing,
    )


def parse_kernel_trace(text: str, source_name: str = "<text>") -> list[KernelProfile]:
    rows = _rows(text, source_name)
    need = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
    if any(c not in rows[0] for c in need):
        raise ProfileFormatError(
            f"{source_name}: not a rocprofv3 kernel-trace CSV (needs {need})", "give *_kernel_trace.csv"
        )
    _check_names(rows, source_name)
    out: list[KernelProfile] = []
    for n, r in enumerate(rows):
        start, end = _f(r, "Start_Timestamp"), _f(r, "End_Timestamp")
        missing = []
        if start is None or end is None:
            missing.append(f"duration_ns (row {n + 2} timestamps unreadable)")
        missing += [f"{f} ({_NO_COUNTERS})" for f in ("dram_bytes_read", "dram_bytes_write", "flop_count")]
        did = _f(r, "Dispatch_Id")
        out.append(
            _from_dispatch_row(
                r, int(did) if did is not None else None, "rocprofv3 kernel_trace", start, end, missing
            )
        )
    return out


def _apply_counters(p: KernelProfile, counters: dict[str, float]) -> None:
    p.counters = dict(counters)
    if "FETCH_SIZE" in counters:
        p.dram_bytes_read = counters["FETCH_SIZE"] * _KB
    if "WRITE_SIZE" in counters:
        p.dram_bytes_write = counters["WRITE_SIZE"] * _KB
    flops: dict[str, float] = {}
    for prec, tag in (("fp16", "F16"), ("fp32", "F32"), ("fp64", "F64")):
        names = [f"SQ_INSTS_VALU_{op}_{tag}" for op in ("ADD", "MUL", "TRANS", "FMA")]
        if all(n in counters for n in names):
            add, mul, trans, fma = (counters[n] for n in names)
            flops[prec] = _VALU_LANES * (add + mul + trans + 2.0 * fma)
    for prec, tag in (
        ("matrix_f16", "F16"),
        ("matrix_bf16", "BF16"),
        ("matrix_f32", "F32"),
        ("matrix_f64", "F64"),
    ):
        n = f"SQ_INSTS_VALU_MFMA_MOPS_{tag}"
        if n in counters:
            flops[prec] = _MFMA_OPS_PER_MOPS * counters[n]
    if flops:
        p.flop_count = flops
        if p.duration_ns:
            p.flop_per_s = {k: v / (p.duration_ns * 1e-9) for k, v in flops.items()}
    got = {"dram_bytes_read": p.dram_bytes_read, "dram_bytes_write": p.dram_bytes_write}
    p.missing = [m for m in p.missing if _NO_COUNTERS not in m]
    p.missing += [
        f"{k} (counter {c} not collected)"
        for (k, v), c in zip(got.items(), ("FETCH_SIZE", "WRITE_SIZE"), strict=True)
        if v is None
    ]
    if not flops:
        p.missing.append(
            "flop_count (collect SQ_INSTS_VALU_{ADD,MUL,FMA,TRANS}_F32 or SQ_INSTS_VALU_MFMA_MOPS_*)"
        )


def parse_counter_collection(text: str, source_name: str = "<text>") -> list[KernelProfile]:
    rows = _rows(text, source_name)
    need = ("Kernel_Name", "Counter_Name", "Counter_Value")
    if any(c not in rows[0] for c in need):
        raise ProfileFormatError(
            f"{source_name}: not a rocprofv3 counter-collection CSV (needs {need})",
            "give *_counter_collection.csv",
        )
    _check_names(rows, source_name)
    by_dispatch: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
    for r in rows:
        key = r.get("Dispatch_Id") or r.get("Correlation_Id") or str(len(by_dispatch))
        entry = by_dispatch.setdefault(key, (r, {}))
        v = parse_number(r["Counter_Value"] or "")
        if v is not None:
            entry[1][r["Counter_Name"]] = entry[1].get(r["Counter_Name"], 0.0) + v
    out: list[KernelProfile] = []
    for key, (r, counters) in by_dispatch.items():
        start, end = _f(r, "Start_Timestamp"), _f(r, "End_Timestamp")
        p = _from_dispatch_row(
            r,
            int(float(key)) if parse_number(key) is not None else None,
            "rocprofv3 counter_collection",
            start,
            end,
            [] if start is not None else ["duration_ns (counter CSV has no timestamps; add --kernel-trace)"],
        )
        _apply_counters(p, counters)
        out.append(p)
    return out


def _xyz(d: Any) -> list[int] | None:
    if isinstance(d, dict) and all(k in d for k in ("x", "y", "z")):
        return [int(d["x"]), int(d["y"]), int(d["z"])]
    return None


def parse_json(text: str, source_name: str = "<text>") -> tuple[list[KernelProfile], list[str]]:
    """rocprofv3 `--output-format json`: dispatches (buffer_records.kernel_dispatch) joined with
    kernel_symbols (VGPR/SGPR/LDS/scratch) and counter records (callback_records.counter_collection)."""
    doc = _load_json(text, source_name)
    tools = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if not isinstance(tools, list) or not tools:
        raise ProfileFormatError(
            f"{source_name}: no 'rocprofiler-sdk-tool' list", "give rocprofv3 JSON output"
        )
    try:
        return _parse_tools(tools, source_name)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError) as exc:
        # a value of another JSON type than rocprofv3 writes (a list where an object belongs, ...)
        raise ProfileFormatError(
            f"{source_name}: rocprofv3 JSON with an unexpected layout ({type(exc).__name__}: {exc})",
            "give the *_results.json as rocprofv3 wrote it",
        ) from None


def _parse_tools(tools: list[Any], source_name: str) -> tuple[list[KernelProfile], list[str]]:
    warnings: list[str] = []
    out: list[KernelProfile] = []
    for tool in tools:
        symbols = {s.get("kernel_id"): s for s in tool.get("kernel_symbols", []) if isinstance(s, dict)}
        counter_names = {
            (c.get("id") or {}).get("handle"): c.get("name")
            for c in tool.get("counters", [])
            if isinstance(c, dict)
        }
        dispatches = (tool.get("buffer_records") or {}).get("kernel_dispatch", []) or []
        counter_recs = (tool.get("callback_records") or {}).get("counter_collection", []) or []
        counters_by_dispatch: dict[Any, dict[str, float]] = {}
        info_by_dispatch: dict[Any, dict[str, Any]] = {}
        for rec in counter_recs:
            dd = rec.get("dispatch_data") or {}
            info = dd.get("dispatch_info") or {}
            did = info.get("dispatch_id")
            info_by_dispatch.setdefault(did, info)
            acc = counters_by_dispatch.setdefault(did, {})
            for item in rec.get("records", []) or []:
                name = counter_names.get((item.get("counter_id") or {}).get("handle"))
                if name is not None and isinstance(item.get("value"), (int, float)):
                    acc[name] = acc.get(name, 0.0) + float(item["value"])
        seen: set[Any] = set()
        for d in dispatches:
            info = d.get("dispatch_info") or {}
            did = info.get("dispatch_id")
            seen.add(did)
            out.append(_json_profile(info, symbols, d.get("start_timestamp"), d.get("end_timestamp")))
            if did in counters_by_dispatch:
                _apply_counters(out[-1], counters_by_dispatch[did])
        for did, info in info_by_dispatch.items():
            if did not in seen:
                p = _json_profile(info, symbols, None, None)
                _apply_counters(p, counters_by_dispatch.get(did, {}))
                out.append(p)
        if not dispatches and not counter_recs:
            warnings.append(
                f"{source_name}: no kernel_dispatch or counter_collection records (capture without "
                f"--kernel-trace "
                f"or --pmc); {len([s for s in symbols.values() if s.get('kernel_name')])} kernel symbols only"
            )
    return out, warnings


def _json_profile(
    info: dict[str, Any], symbols: dict[Any, dict[str, Any]], start: Any, end: Any
) -> KernelProfile:
    sym = symbols.get(info.get("kernel_id"), {})
    name = sym.get("formatted_kernel_name") or sym.get("kernel_name") or f"kernel_id={info.get('kernel_id')}"
    dur = (
        float(end) - float(start)
        if isinstance(start, (int, float)) and isinstance(end, (int, float))
        else None
    )
    return KernelProfile(
        kernel=str(name),
        launch_id=info.get("dispatch_id"),
        profiler="rocprofv3",
        source="rocprofv3 json",
        device=str((info.get("agent_id") or {}).get("handle"))
        if isinstance(info.get("agent_id"), dict)
        else None,
        grid=_xyz(info.get("grid_size")),
        block=_xyz(info.get("workgroup_size")),
        grid_unit="work_items",
        duration_ns=dur,
        registers_per_thread=float(sym["arch_vgpr_count"]) if "arch_vgpr_count" in sym else None,
        accum_vgpr_count=float(sym["accum_vgpr_count"]) if "accum_vgpr_count" in sym else None,
        sgpr_count=float(sym["sgpr_count"]) if "sgpr_count" in sym else None,
        shared_mem_per_block_bytes=float(info.get("group_segment_size", sym.get("group_segment_size", 0))),
        scratch_bytes_per_thread=float(info.get("private_segment_size", sym.get("private_segment_size", 0))),
        missing=[] if dur is not None else ["duration_ns (no kernel_dispatch timestamps)"],
    )


def _load_json(text: str, source_name: str) -> Any:
    """rocprofv3 JSON through the guarded parser (depth, number length, finite numbers, surrogates): the
    standard parser's RecursionError and int-length ValueError escaped as tracebacks (issue 41)."""
    try:
        return readers.loads_json(text, source_name, hint="give the *_results.json rocprofv3 wrote")
    except readers.ReaderError as exc:
        cause = exc.__cause__
        if isinstance(cause, json.JSONDecodeError):
            raise ProfileFormatError(
                f"{source_name}: not valid JSON ({cause.msg} at char {cause.pos})", "give the *_results.json"
            ) from None
        raise ProfileFormatError(exc.message, exc.hint) from exc


def kernel_symbols(text: str, source_name: str = "<text>") -> list[dict[str, Any]]:
    """Per-kernel resources from the JSON's kernel_symbols table (name, VGPR, AGPR, SGPR, LDS, scratch)."""
    doc = _load_json(text, source_name)
    out: list[dict[str, Any]] = []
    tools = doc.get("rocprofiler-sdk-tool", []) if isinstance(doc, dict) else []
    for tool in tools if isinstance(tools, list) else []:
        symbols = tool.get("kernel_symbols", []) if isinstance(tool, dict) else []
        for s in symbols if isinstance(symbols, list) else []:
            if isinstance(s, dict) and s.get("kernel_name"):
                out.append(
                    {
                        "kernel": s.get("formatted_kernel_name") or s["kernel_name"],
                        "arch_vgpr_count": s.get("arch_vgpr_count"),
                        "accum_vgpr_count": s.get("accum_vgpr_count"),
                        "sgpr_count": s.get("sgpr_count"),
                        "lds_bytes": s.get("group_segment_size"),
                        "scratch_bytes": s.get("private_segment_size"),
                    }
                )
    return out


def find_outputs(outdir: str | Path) -> dict[str, list[Path]]:
    base = Path(outdir)
    kinds: dict[str, Iterable[Path]] = {
        "trace": base.rglob("*kernel_trace.csv"),
        "counters": base.rglob("*counter_collection.csv"),
        "json": base.rglob("*results.json"),
    }
    return {k: sorted(v) for k, v in kinds.items()}
