"""CSV traces: rocprofv3 kernel trace and kernel stats, `nsys stats` cuda_gpu_trace / cuda_gpu_kern_sum, ncu.

Column names as the tools write them: rocprofv3 1.x `--kernel-trace --stats --output-format csv`
(`*_kernel_trace.csv`: Kernel_Name, Start_Timestamp, End_Timestamp in ns, Grid_Size_*, Workgroup_Size_*;
`*_kernel_stats.csv`: Name, Calls, TotalDurationNs, MinNs, MaxNs); `nsys stats --format csv --report
cuda_gpu_trace` (Start (ns), Duration (ns), Name, GrdX..., BlkX...) and `--report cuda_gpu_kern_sum`
(Total Time (ns), Instances, Med (ns), Min (ns), Max (ns), Name); ncu `--csv --page raw` read by
`profile/ncu_csv.py` (gpu__time_duration.sum per launch; no timeline, so no idle time).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.foundation.readers import ReaderError, count, finite, read_bytes, read_csv_table
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.readers.gzipped import is_gzip, maybe_gunzip
from kernelpilot.workload.readers.trace import Activity, Aggregate, Trace

MAX_TRACE_BYTES = 4 * 2**30  # a CSV table read whole: past this, a tool's table is not what was given
if TYPE_CHECKING:
    from kernelpilot.profile.ncu_csv import RawKernel

_ROCPROF_NOTE = "rocprofv3 kernel trace: kernels only (no host calls, ops or ranges)"


def sniff(text: str) -> str | None:
    """The CSV format from its header line (after any tool banner lines), or None."""
    for line in text.splitlines()[:50]:
        if "Kernel_Name" in line and "Start_Timestamp" in line:
            return "rocprof_trace"
        if "TotalDurationNs" in line and "Calls" in line:
            return "rocprof_stats"
        if "Total Time (ns)" in line and "Instances" in line:
            return "nsys_kern_sum"
        if "Start (ns)" in line and "Duration (ns)" in line:
            return "nsys_gpu_trace"
        if '"Kernel Name"' in line or "gpu__time_duration" in line:
            return "ncu_csv"
    return None


MAX_NAME_CHARS = 65_536  # a C++ template kernel name runs to a few thousand; a longer one is not a name


def _rows(text: str, source: str, need: tuple[str, ...]) -> list[dict[str, str]]:
    """The table's rows (dialect detected by `foundation.readers.read_csv_table`); each remembers its line."""
    try:
        table = read_csv_table(text, source, need)
    except ReaderError as exc:
        raise TraceFormatError(exc.message, exc.hint) from exc
    if not table.rows:
        raise TraceFormatError(
            f"{source}: the table has a header but no rows", "the capture recorded nothing"
        )
    for row, line in zip(table.rows, table.lines, strict=True):
        row[_LINE] = str(line)
        for key in ("Name", "Kernel_Name"):
            if len(row.get(key, "")) > MAX_NAME_CHARS:
                raise TraceFormatError(
                    f"{source}:{line}: a {key} of {len(row[key]):,} characters (over {MAX_NAME_CHARS:,})",
                    "give the tool's CSV as written",
                )
    return table.rows


_LINE = "\0line"  # the file line of a row, kept beside its cells (no CSV column has this name)


def _num(row: dict[str, str], key: str, source: str, minimum: float | None = 0.0) -> float:
    """A finite number at least `minimum`: a NaN, infinite or negative duration or count cannot be true."""
    try:
        return finite(row.get(key, ""), source, row.get(_LINE, ""), key, minimum=minimum)
    except ReaderError as exc:
        raise TraceFormatError(exc.message, exc.hint) from exc


def _int(row: dict[str, str], key: str, source: str) -> int:
    try:
        return count(row.get(key, ""), source, row.get(_LINE, ""), key)
    except ReaderError as exc:
        raise TraceFormatError(exc.message, exc.hint) from exc


def read_rocprof_trace(text: str, source: str, steps: int | None) -> Trace:
    rows = _rows(text, source, ("Kernel_Name", "Start_Timestamp", "End_Timestamp"))
    acts = []
    for r in rows:
        s, e = _int(r, "Start_Timestamp", source), _int(r, "End_Timestamp", source)
        if e < s:
            raise TraceFormatError(
                f"{source}:{r[_LINE]}: a dispatch ends before it starts ({s} > {e})", "record it again"
            )
        grid = [_int(r, f"Grid_Size_{d}", source) for d in "XYZ"] if "Grid_Size_X" in r else None
        block = [_int(r, f"Workgroup_Size_{d}", source) for d in "XYZ"] if "Workgroup_Size_X" in r else None
        acts.append(
            Activity(
                name=r["Kernel_Name"], start_us=s / 1000.0, dur_us=(e - s) / 1000.0, grid=grid, block=block
            )
        )
    return Trace(
        format="rocprof_trace",
        source=source,
        method=_ROCPROF_NOTE + "; grid in work-items",
        steps=steps or 1,
        activities=acts,
        notes=[] if steps else ["no step markers in a rocprofv3 trace: the whole trace is taken as 1 step"],
    )


def _aggregates(
    rows: list[dict[str, str]],
    source: str,
    *,
    calls: str,
    total: str,
    lo: str,
    hi: str,
    med: str | None = None,
) -> list[Aggregate]:
    """Per-name summary rows (rocprofv3 --stats, nsys cuda_gpu_kern_sum): the same fields under each tool's
    column names, nanoseconds to µs."""
    return [
        Aggregate(
            name=r["Name"],
            calls=_int(r, calls, source),
            total_us=_num(r, total, source) / 1000.0,
            min_us=_num(r, lo, source) / 1000.0,
            max_us=_num(r, hi, source) / 1000.0,
            median_us=_num(r, med, source) / 1000.0 if med else None,
        )
        for r in rows
    ]


def read_rocprof_stats(text: str, source: str, steps: int | None) -> Trace:
    rows = _rows(text, source, ("Name", "Calls", "TotalDurationNs", "MinNs", "MaxNs"))
    aggs = _aggregates(rows, source, calls="Calls", total="TotalDurationNs", lo="MinNs", hi="MaxNs")
    return Trace(
        "rocprof_stats",
        source,
        "rocprofv3 --stats kernel table (no timeline: no idle time)",
        steps or 1,
        aggregates=aggs,
        timeline=False,
    )


def read_nsys_gpu_trace(text: str, source: str, steps: int | None) -> Trace:
    rows = _rows(text, source, ("Start (ns)", "Duration (ns)", "Name"))
    acts = []
    for r in rows:
        name = r["Name"]
        kind = "memcpy" if "[CUDA memcpy" in name else "memset" if "[CUDA memset" in name else "kernel"
        grid = [_int(r, k, source) for k in ("GrdX", "GrdY", "GrdZ")] if r.get("GrdX", "").strip() else None
        block = [_int(r, k, source) for k in ("BlkX", "BlkY", "BlkZ")] if r.get("BlkX", "").strip() else None
        acts.append(
            Activity(
                name,
                _num(r, "Start (ns)", source) / 1000.0,
                _num(r, "Duration (ns)", source) / 1000.0,
                kind=kind,
                grid=grid,
                block=block,
            )
        )
    return Trace(
        "nsys_gpu_trace",
        source,
        "nsys stats cuda_gpu_trace (device timeline; no ops or ranges)",
        steps or 1,
        activities=acts,
    )


def read_nsys_kern_sum(text: str, source: str, steps: int | None) -> Trace:
    rows = _rows(text, source, ("Total Time (ns)", "Instances", "Name", "Med (ns)", "Min (ns)", "Max (ns)"))
    aggs = _aggregates(
        rows, source, calls="Instances", total="Total Time (ns)", lo="Min (ns)", hi="Max (ns)", med="Med (ns)"
    )
    return Trace(
        "nsys_kern_sum",
        source,
        "nsys stats cuda_gpu_kern_sum (no timeline: no idle time)",
        steps or 1,
        aggregates=aggs,
        timeline=False,
    )


_NCU_METRICS = frozenset({"gpu__time_duration.sum"})  # the one cell of ~2,000 a workload trace needs


def read_ncu_csv(text: str, source: str, steps: int | None) -> Trace:
    """ncu raw page: one row per profiled launch; durations from gpu__time_duration.sum."""
    from kernelpilot.profile.ncu_csv import RawPage

    return ncu_trace(RawPage(text.splitlines(), source, _NCU_METRICS), source, steps)


def ncu_trace(page: Iterable[RawKernel], source: str, steps: int | None) -> Trace:
    """The trace of an ncu raw page's launches, consumed as they stream (`profile.ncu_csv.RawPage`): each
    launch keeps its name, duration, grid and block, never its ~2,000 other metrics."""
    acts = []
    for k in page:
        dur = k.values.get("gpu__time_duration.sum")
        if not isinstance(dur, float):
            raise TraceFormatError(
                f"{source}: launch {k.launch_id} of {k.kernel!r} has no gpu__time_duration.sum",
                "profile with --metrics gpu__time_duration.sum --csv --page raw",
            )
        acts.append(Activity(k.kernel, 0.0, dur / 1000.0, grid=k.grid, block=k.block))
    return Trace(
        "ncu_csv",
        source,
        "ncu per-launch gpu__time_duration (kernels serialised, no timeline: idle time is lost)",
        steps or 1,
        activities=acts,
        timeline=False,
        notes=[] if steps else ["ncu rows carry no step markers: the whole file is taken as 1 step"],
    )


READERS = {
    "rocprof_trace": read_rocprof_trace,
    "rocprof_stats": read_rocprof_stats,
    "nsys_gpu_trace": read_nsys_gpu_trace,
    "nsys_kern_sum": read_nsys_kern_sum,
    "ncu_csv": read_ncu_csv,
}


def _ncu_streamed(path: Path, fmt: str, steps: int | None) -> Trace | None:
    """An uncompressed ncu raw page read as a stream (its 20,000 launches held whole took 4.7 GB); None
    for any other table (read whole below)."""
    if fmt not in ("auto", "ncu_csv"):
        return None
    with path.open("rb") as fh:
        start = fh.read(1 << 16)  # the header's first cells are in the first KB after ncu's banner
    if is_gzip(start) or (fmt == "auto" and sniff(start.decode("utf-8", "replace")) != "ncu_csv"):
        return None
    from kernelpilot.profile.ncu_csv import RawPage

    return ncu_trace(RawPage.from_file(path, metrics=_NCU_METRICS), str(path), steps)


def read_table(path: Path, fmt: str, steps: int | None) -> Trace:
    streamed = _ncu_streamed(path, fmt, steps)
    if streamed is not None:
        return streamed
    try:
        data = read_bytes(path, "trace", MAX_TRACE_BYTES)
    except KernelpilotError as exc:
        raise TraceFormatError(exc.message, exc.hint) from exc
    data = maybe_gunzip(data, str(path))  # gzip told by its magic bytes, not the suffix
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    if fmt == "auto":
        found = sniff(text)
        if found is None:
            raise TraceFormatError(
                f"{str(path)!r} is not a trace kernelpilot reads (Kineto JSON, rocprofv3 kernel "
                "trace/stats CSV, "
                "nsys stats cuda_gpu_trace/cuda_gpu_kern_sum CSV, ncu raw CSV)",
                "give one of those, or name the format with --format",
            )
        fmt = found
    return READERS[fmt](text, str(path), steps)
