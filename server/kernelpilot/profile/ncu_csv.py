"""Parsers for ncu CSV output: `--csv --page raw`, `--csv --page details`, `--csv --page source`.

Handles what ncu really writes: `==PROF==`/`==WARNING==` lines and program output mixed into stdout, a units
row under the raw header, auto-scaled units (us, Mbyte) or base units, thousands separators ("176,256"),
multi-kernel files, and "n/a" cells. A truncated last row is dropped with a warning, never half-read.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.profile.errors import NoKernelsProfiledError, ProfileFormatError
from kernelpilot.profile.units import parse_number, to_base, unit_scale

_ID_COLS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name")


@dataclass
class RawKernel:
    """One launch of the raw page: identity columns and every metric (value in base unit, base unit)."""

    launch_id: int | None
    kernel: str
    device: str | None
    grid: list[int] | None
    block: list[int] | None
    values: dict[str, float | str | None] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)


@dataclass
class ParsedPage:
    kernels: list[RawKernel]
    warnings: list[str]


def read_text(path: str | Path) -> str:
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"profile file {str(path)!r} does not exist", "give the path of an ncu CSV file")
    data = p.read_bytes()
    return data.decode("utf-8", "replace")


def profiler_messages(text: str) -> list[str]:
    """The `==PROF==` / `==WARNING==` / `==ERROR==` lines ncu mixes into its output."""
    return [ln.strip() for ln in text.splitlines() if ln.startswith("==")]


def check_no_kernels(text: str) -> None:
    if "No kernels were profiled" in text:
        avail = re.findall(r"^\s*\d+\.\s+(\S.*)$", text.split("No kernels were profiled", 1)[1], re.M)
        raise NoKernelsProfiledError(
            "ncu profiled no kernels: no launch matched the kernel filter / launch range"
            + (f"; kernels seen: {', '.join(avail[:20])}" if avail else ""),
            "fix --kernel-name (exact function name or regex:<expr>), --launch-skip/--launch-count, or use "
            "--profile-from-start only when the program calls cudaProfilerStart",
        )


def _csv_error(source_name: str, exc: csv.Error) -> ProfileFormatError:
    return ProfileFormatError(
        f"{source_name}: not a readable CSV ({exc})",
        "give the ncu --csv output as ncu wrote it (a cut or edited file cannot be read)",
    )


def _csv_rows(text: str, source_name: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    try:
        return list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error as exc:  # an unclosed quote runs a field past the csv module's size limit
        raise _csv_error(source_name, exc) from None


def _source_rows(text: str, source_name: str) -> list[list[str]]:
    """Split source-page lines on '","': ncu does not escape quotes inside CUDA source text (extern "C")."""
    out: list[list[str]] = []
    for ln in text.splitlines():
        if not ln.startswith('"'):
            continue
        body = ln.rstrip()
        if body.endswith(","):
            body = body[:-1]
        if len(body) >= 2 and body.endswith('"'):
            out.append(body[1:-1].split('","'))
        else:
            try:
                out.append(next(csv.reader([ln])))
            except csv.Error as exc:
                raise _csv_error(source_name, exc) from None
    return out


def _dims(text: str | None) -> list[int] | None:
    if not text:
        return None
    nums = re.findall(r"\d+", text.replace(",", " ") if text.startswith("(") else text.replace(",", ""))
    return [int(n) for n in nums] if nums else None


def _launch_id(text: str) -> int | None:
    v = parse_number(text)
    return int(v) if v is not None else None


_NA_CELLS = frozenset(("", "n/a", "(!) n/a", "-", "N/A"))
_INF = float("inf")


def _cell_value(cell: str, factor: float) -> float | str | None:
    """A raw-page cell in base units: number (thousands separators removed), None for n/a, else the text."""
    c = cell.replace(",", "") if "," in cell else cell
    try:
        v = float(c)
    except ValueError:
        t = cell.strip()
        return None if t in _NA_CELLS else cell
    if v != v or v in (_INF, -_INF) or "_" in c:
        return cell  # 'nan', 'inf', '1_000' are not ncu numbers: keep the text
    return v * factor


def _no_rows(source_name: str) -> ProfileFormatError:
    return ProfileFormatError(
        f"{source_name}: no CSV rows (empty report or not `ncu --csv --page raw` output)",
        "re-run ncu with --csv --page raw, or pass the details/source page with the matching kind",
    )


def _check_raw_header(header: list[str], source_name: str) -> None:
    if header[:1] != ["ID"] or "Kernel Name" not in header:
        raise ProfileFormatError(
            f"{source_name}: first CSV row is not an ncu raw-page header (starts {header[:3]})",
            "give the output of `ncu --csv --page raw` (details pages have a 'Section Name' column)",
        )
    if "Section Name" in header:
        raise ProfileFormatError(
            f"{source_name}: this is an ncu details page, not a raw page", "parse it with kind=ncu_details"
        )


_MESSAGE_LINES = 2000  # of the "No kernels were profiled" list kept for its error (the rest is not needed)


class RawPage:
    """The launches of an `ncu --csv --page raw` page, streamed: one `RawKernel` per launch row, read as it
    is iterated (once), so memory holds one row, not the page. A 20,000-launch full-set page (381 MB) held
    whole peaked at 4.7 GB (`bench/ncu_csv_memory.py`); streaming keeps what the caller keeps.

    `warnings` (truncated rows left out) is complete when the iteration ends. An "No kernels were profiled"
    message anywhere in the output raises `NoKernelsProfiledError` (as `check_no_kernels`) at the end.
    """

    def __init__(self, lines: Iterable[str], source_name: str, metrics: frozenset[str] | None = None) -> None:
        self.source_name = source_name
        self.metrics = metrics  # only these metric columns are converted (None: all)
        self.warnings: list[str] = []
        self._lines = lines
        self._messages: list[str] | None = None  # from the "No kernels were profiled" line on

    @classmethod
    def from_file(
        cls, path: str | Path, source_name: str | None = None, metrics: frozenset[str] | None = None
    ) -> RawPage:
        """A page streamed from a file (UTF-8, undecodable bytes replaced), read line by line."""
        return cls(_file_lines(Path(path)), source_name or str(path), metrics)

    def _csv_lines(self) -> Iterator[str]:
        for ln in self._lines:
            if ln.startswith('"'):
                yield ln
            elif self._messages is not None:
                if len(self._messages) < _MESSAGE_LINES:
                    self._messages.append(ln)
            elif "No kernels were profiled" in ln:
                self._messages = [ln]

    def _rows(self) -> Iterator[list[str]]:
        reader = csv.reader(self._csv_lines())
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # an unclosed quote runs a field past the csv module's size limit
                raise _csv_error(self.source_name, exc) from None
            yield row

    def __iter__(self) -> Iterator[RawKernel]:
        rows = self._rows()
        header = next(rows, None)
        if header is None:
            self._raise_no_kernels()
            raise _no_rows(self.source_name)
        _check_raw_header(header, self.source_name)
        idx = {h: i for i, h in enumerate(header)}
        first = next(rows, None)
        units = [""] * len(header)
        if first is not None and first[:1] == [""]:
            units = first + [""] * (len(header) - len(first))
            first = None
        first_metric = max(idx.get(c, 0) for c in ("CC", "Device", "Grid Size", "Kernel Name")) + 1
        metric_cols = [
            (i, header[i], units[i])
            for i in range(first_metric, len(header))
            if self.metrics is None or header[i] in self.metrics
        ]
        scaled_cols = [(i, name, unit_scale(unit)[1]) for i, name, unit in metric_cols]
        base_units = {name: unit_scale(unit)[0] for _, name, unit in metric_cols}
        count = 0
        for n, row in enumerate(rows if first is None else itertools.chain([first], rows)):
            if len(row) != len(header):
                self.warnings.append(
                    f"{self.source_name}: launch row {n + 1} has {len(row)} of {len(header)} columns "
                    "(truncated file?); row ignored"
                )
                continue
            count += 1
            yield RawKernel(
                launch_id=_launch_id(row[idx["ID"]]),
                kernel=row[idx["Kernel Name"]],
                device=row[idx["Device"]] if "Device" in idx else None,
                grid=_dims(row[idx["Grid Size"]]) if "Grid Size" in idx else None,
                block=_dims(row[idx["Block Size"]]) if "Block Size" in idx else None,
                values={name: _cell_value(row[i], factor) for i, name, factor in scaled_cols},
                units=base_units,
            )
        self._raise_no_kernels()
        if not count:
            raise ProfileFormatError(
                f"{self.source_name}: raw page has a header but no complete launch row",
                "the file is empty or truncated; re-run the profiler",
            )

    def _raise_no_kernels(self) -> None:
        if self._messages is not None:
            check_no_kernels("\n".join(self._messages))


def _file_lines(path: Path) -> Iterator[str]:
    """The file's lines as `str.splitlines` would give them, read a line at a time."""
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:  # a BOM is not a cell
        for chunk in fh:
            yield from chunk.splitlines()


def parse_raw(text: str, source_name: str = "<text>") -> ParsedPage:
    """Parse `ncu --csv --page raw` (one row per launch, one column per metric, optional units row) held
    in memory; a file is better streamed with `RawPage.from_file`."""
    check_no_kernels(text)
    page = RawPage(text.splitlines(), source_name)
    kernels = list(page)
    return ParsedPage(kernels, page.warnings)


def parse_details(text: str, source_name: str = "<text>") -> ParsedPage:
    """Parse `ncu --csv --page details`: long format, one row per (launch, section, metric)."""
    check_no_kernels(text)
    rows = _csv_rows(text, source_name)
    if not rows:
        raise ProfileFormatError(
            f"{source_name}: no CSV rows in details page", "re-run with --csv --page details"
        )
    header = rows[0]
    need = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
    if any(c not in header for c in need):
        raise ProfileFormatError(
            f"{source_name}: not an ncu details page "
            f"(missing columns {[c for c in need if c not in header]})",
            "give the output of `ncu --csv --page details`",
        )
    idx = {h: i for i, h in enumerate(header)}
    warnings: list[str] = []
    by_id: dict[str, RawKernel] = {}
    for n, row in enumerate(rows[1:]):
        if len(row) < idx["Metric Value"] + 1:
            warnings.append(f"{source_name}: row {n + 2} is short (truncated file?); ignored")
            continue
        lid = row[idx["ID"]]
        k = by_id.get(lid)
        if k is None:
            k = RawKernel(
                launch_id=_launch_id(lid),
                kernel=row[idx["Kernel Name"]],
                device=row[idx["Device"]] if "Device" in idx else None,
                grid=_dims(row[idx["Grid Size"]]) if "Grid Size" in idx else None,
                block=_dims(row[idx["Block Size"]]) if "Block Size" in idx else None,
            )
            by_id[lid] = k
        name = row[idx["Metric Name"]]
        if not name:
            continue  # rule rows
        key = f"{row[idx['Section Name']]}/{name}"
        val, base = to_base(row[idx["Metric Value"]], row[idx["Metric Unit"]])
        cell = row[idx["Metric Value"]].strip()
        k.values[key] = val if (val is not None or cell in ("", "n/a", "(!) n/a", "-")) else cell
        k.units[key] = base
    if not by_id:
        raise ProfileFormatError(f"{source_name}: details page has no metric rows", "re-run the profiler")
    return ParsedPage(list(by_id.values()), warnings)


# ------------------------------------------------------------------------------------ source page

_STALL_COL = re.compile(r"^stall_(\w+)$")


@dataclass
class SourceLineRow:
    address: str
    instruction: str
    samples: float
    samples_not_issued: float
    executed: float | None
    reasons: dict[str, float]
    file: str | None
    line: int | None
    source_text: str | None


@dataclass
class SourceKernel:
    kernel: str
    file: str | None
    rows: list[SourceLineRow]
    line_rows: list[SourceLineRow] = field(default_factory=list)


def _row_metrics(row: list[str], col: dict[str, int]) -> tuple[dict[str, float], float | None, float | None]:
    """Stall reasons (non-zero only), all samples and not-issued samples of one source-page row."""
    reasons: dict[str, float] = {}
    for h, i in col.items():
        m = _STALL_COL.match(h)
        if m:
            v = parse_number(row[i])
            if v:
                reasons[m.group(1)] = v
    all_col, not_col = "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)"
    samples = parse_number(row[col[all_col]]) if all_col in col else None
    not_issued = parse_number(row[col[not_col]]) if not_col in col else None
    return reasons, samples, not_issued


def parse_source(text: str, source_name: str = "<text>") -> tuple[list[SourceKernel], list[str]]:
    """Parse `ncu --csv --page source` with `--print-source sass` or `cuda,sass`.

    With cuda,sass each SASS row is mapped to the source line above it.
    """
    check_no_kernels(text)
    warnings: list[str] = [m for m in profiler_messages(text) if "No lineinfo" in m or "No source" in m]
    rows = _source_rows(text, source_name)
    kernels: list[SourceKernel] = []
    cur: SourceKernel | None = None
    header: list[str] | None = None
    col: dict[str, int] = {}
    cur_line: int | None = None
    cur_text: str | None = None
    cur_file: str | None = None
    for row in rows:
        if not row:
            continue
        tag = row[0]
        if tag in ("Kernel Name", "Function Name") and len(row) == 2:
            if tag == "Function Name" and cur is not None and cur.kernel == row[1]:
                pass  # same kernel, another source file block
            else:
                cur = SourceKernel(kernel=row[1], file=cur_file, rows=[])
                kernels.append(cur)
            header = None
            continue
        if tag == "File Path" and len(row) == 2:
            cur_file = row[1]
            header = None
            continue
        if tag in ("Address", "Line No") or (len(row) > 2 and row[0] == "Line No"):
            header = row
            col = {}
            for i, h in enumerate(row):
                col.setdefault(h, i)
            if cur is None:
                cur = SourceKernel(kernel="<unnamed>", file=cur_file, rows=[])
                kernels.append(cur)
            continue
        if header is None or cur is None:
            continue
        if len(row) != len(header):
            warnings.append(f"{source_name}: source row with {len(row)} of {len(header)} columns ignored")
            continue
        mapped = "Line No" in col
        addr_i = col.get("Address")
        reasons, samples, not_issued = _row_metrics(row, col)
        if mapped:
            # cuda,sass layout: "Line No","Source","Address","Source",... ; a source row has a line number and
            # '-' as address (its metrics are ncu's own per-line sums), a SASS row has no line number.
            line_txt = row[col["Line No"]]
            if line_txt.strip():
                cur_line = int(parse_number(line_txt) or 0) or None
                cur_text = row[1]
                cur.line_rows.append(
                    SourceLineRow(
                        "-",
                        "",
                        samples or 0.0,
                        not_issued or 0.0,
                        None,
                        reasons,
                        cur_file,
                        cur_line,
                        cur_text,
                    )
                )
                continue
            sass_i = (addr_i or 2) + 1
        else:
            sass_i = col.get("Source", 1)
        if addr_i is None:
            continue
        executed = parse_number(row[col["Instructions Executed"]]) if "Instructions Executed" in col else None
        cur.rows.append(
            SourceLineRow(
                address=row[addr_i],
                instruction=row[sass_i].strip(),
                samples=samples or 0.0,
                samples_not_issued=not_issued or 0.0,
                executed=executed,
                reasons=reasons,
                file=cur_file if mapped else None,
                line=cur_line if mapped else None,
                source_text=cur_text if mapped else None,
            )
        )
    kernels = [k for k in kernels if k.rows]
    if not kernels:
        raise ProfileFormatError(
            f"{source_name}: no SASS rows found in source page",
            "export with `ncu --import r.ncu-rep --csv --page source --print-source cuda,sass` "
            "(profile with the SourceCounters section, e.g. --set full)",
        )
    return kernels, warnings


# ------------------------------------------------------------------------------ pipes (raw page)

_PIPE_INST = re.compile(r"^sm__inst_executed_pipe_([a-z0-9_]+)\.(sum|avg)(?:\.(.+))?$")
_PIPE_CYCLES = re.compile(r"^sm__pipe_([a-z0-9_]+)_cycles_active\.avg\.pct_of_peak_sustained_active$")
INST_EXECUTED = "smsp__inst_executed.sum"
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
SM_CYCLES_ACTIVE = "sm__cycles_active.avg"


@dataclass
class _Pipe:
    inst: float | None = None
    util_active: float | None = None
    util_elapsed: float | None = None
    peak: float | None = None
    cycles_pct: float | None = None


def _pipe_slot(pipes: dict[str, _Pipe], name: str, agg: str, rest: str | None, v: float) -> None:
    p = pipes.setdefault(name, _Pipe())
    if agg == "sum" and rest is None:
        p.inst = v
    elif agg == "sum" and rest == "peak_sustained":
        p.peak = v
    elif agg == "avg" and rest == "pct_of_peak_sustained_active":
        p.util_active = v
    elif agg == "avg" and rest == "pct_of_peak_sustained_elapsed":
        p.util_elapsed = v


def pipes_from_raw(values: dict[str, float | str | None]) -> list[dict[str, float | str | None]]:
    """Per-pipe rows (pipe, inst_executed, utilization_pct, peak_inst_per_cycle, cycles_active_pct) from a
    raw page's `sm__inst_executed_pipe_*` and `sm__pipe_*_cycles_active` metrics, busiest first.

    Pipes with none of those numbers are left out; `_realtime` triage copies are ignored (their names start
    with a section prefix, e.g. `TPC.TriageCompute.`).
    """
    pipes: dict[str, _Pipe] = {}
    for name, v in values.items():
        if not isinstance(v, float):
            continue
        m = _PIPE_INST.match(name)
        if m:
            _pipe_slot(pipes, m.group(1), m.group(2), m.group(3), v)
            continue
        c = _PIPE_CYCLES.match(name)
        if c:
            pipes.setdefault(c.group(1), _Pipe()).cycles_pct = v
    rows: list[dict[str, float | str | None]] = []
    for name, p in pipes.items():
        util = p.util_active if p.util_active is not None else p.util_elapsed
        if p.inst is None and util is None and p.cycles_pct is None:
            continue
        rows.append(
            {
                "pipe": name,
                "inst_executed": p.inst,
                "utilization_pct": util,
                "peak_inst_per_cycle": p.peak,
                "cycles_active_pct": p.cycles_pct,
            }
        )
    rows.sort(key=lambda r: -max(float(r["utilization_pct"] or 0.0), float(r["cycles_active_pct"] or 0.0)))
    return rows
