"""Reader of a decoded rocprofv3 ATT dispatch folder (rocprof-trace-decoder output, format 3.x).

Files (one dispatch): `code.json` (`{"version", "header", "code": rows}`; the header names the columns:
`ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle`), `filenames.json` (the per-wave
files by
SE/SIMD/slot/wave with begin/end), `wstates<N>.json` (number of sampled waves in state N over time),
`occupancy.json` (wave start/end events per SE), `realtime.json` (shader clock vs. realtime clock),
`snapshots.json` (source path -> captured copy in the folder), and one `se*_sm*_sl*_wv*.json` per
sampled wave.

The per-wave files are the bulk of a capture (GBs for long kernels); they are streamed in fixed-size chunks
and
only their scalar fields and array lengths are kept, so memory does not grow with their size. Everything
else is
small and read whole. Every failure names the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import InputFileError
from kernelpilot.profile.errors import AttFormatError

SUPPORTED_MAJOR = (
    "3",
)  # rocprof-trace-decoder output format versions this reader knows (1.1.0 writes 3.0.0)
REQUIRED_COLUMNS = ("ISA", "LineNumber", "Source", "Vaddr", "Hit", "Latency", "Stall", "Idle")
DISPATCH_RE = re.compile(r"^ui_output_agent_(\d+)_dispatch_(\d+)")
WAVE_RE = re.compile(r"^se(\d+)_sm(\d+)_sl(\d+)_wv(\d+)\.json$")
KNOWN = ", ".join(v + ".x" for v in SUPPORTED_MAJOR)
CHUNK = (
    1 << 18
)  # bytes per read of a per-wave file: memory stays a small multiple of this (cache-sized: fastest)


@dataclass
class CodeTable:
    version: str
    rows: list[
        tuple[int, int, str, str, int, int, int, int]
    ]  # index, vaddr, isa, source, hit, lat, stall, idle


@dataclass
class WaveFileInfo:
    path: Path
    se: int
    begin: int
    end: int
    num_insts: int = 0
    instructions_len: int = 0
    size_bytes: int = 0


@dataclass
class Folder:
    path: Path
    code: CodeTable
    waves: list[WaveFileInfo] = field(default_factory=list)
    wstates: dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = field(default_factory=dict)
    occupancy: dict[str, list[list[int]]] = field(default_factory=dict)
    dispatch_names: dict[str, str] = field(default_factory=dict)
    realtime: dict[str, Any] | None = None
    snapshots: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _bad(path: Path, what: str, hint: str = "") -> AttFormatError:
    return AttFormatError(
        f"{path}: {what}",
        hint
        or "re-decode the capture with rocprofv3 (--att), or give an intact ui_output_agent_*_dispatch_* "
        "folder",
    )


def load_json(path: Path) -> Any:
    """Parse one small JSON file; a truncated or invalid file is a typed error naming it."""
    # the guarded reader: a FIFO or device is refused before it is opened (it blocked here), nesting and
    # number length are bounded (issue 41)
    try:
        return readers.read_json(path, "ATT file")
    except readers.ReaderError as exc:
        raise _bad(path, f"truncated or invalid JSON ({exc.message})") from exc
    except InputFileError as exc:
        raise _bad(path, "missing" if "not found" in exc.message else exc.message) from exc


def find_dispatch(path: str) -> Path:
    """The dispatch folder itself, or the newest `ui_output_agent_*_dispatch_*` folder under `path`."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"ATT folder {path!r} does not exist", "give a ui_output_agent_*_dispatch_* folder"
        )
    if not p.is_dir():
        raise _bad(p, "is a file, not an ATT dispatch folder", "give the ui_output_agent_*_dispatch_* folder")
    if (p / "code.json").exists():
        return p
    subs = [d for d in p.iterdir() if d.is_dir() and DISPATCH_RE.match(d.name) and (d / "code.json").exists()]
    if not subs:
        raise _bad(
            p,
            "not an ATT dispatch folder (no code.json, no ui_output_agent_*_dispatch_* folder inside)",
            "capture with `rocprofv3 --att` and give the decoded ui_output_agent_*_dispatch_* folder",
        )
    return max(subs, key=lambda d: (d.stat().st_mtime_ns, d.name))


def read_code(path: Path) -> CodeTable:
    doc = load_json(path)
    if not isinstance(doc, dict) or "code" not in doc or "header" not in doc:
        raise _bad(path, "not an ATT code.json (no 'header'/'code')")
    version = str(doc.get("version", ""))
    if version.split(".")[0] not in SUPPORTED_MAJOR:
        raise _bad(
            path,
            f"unknown ATT format version {version!r} (this reader knows {KNOWN})",
            "decode with rocprofv3 / rocprof-trace-decoder 1.x, or report the new format",
        )
    header = [h.strip() for h in str(doc["header"]).split(",")]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise _bad(path, f"header {doc['header']!r} lacks column(s) {', '.join(missing)}")
    col = {name: header.index(name) for name in REQUIRED_COLUMNS}
    width = len(header)
    rows: list[tuple[int, int, str, str, int, int, int, int]] = []
    code = doc["code"]
    if not isinstance(code, list):
        raise _bad(path, "'code' is not a list of rows")
    for i, r in enumerate(code):
        if not isinstance(r, list) or len(r) != width:
            raise _bad(
                path, f"row {i} has {len(r) if isinstance(r, list) else 'no'} columns, header has {width}"
            )
        isa = r[col["ISA"]]
        if not isinstance(isa, str):
            raise _bad(path, f"row {i}: ISA is not text")
        if isa.startswith(";") or not isa.strip():
            continue  # the decoder's comment row (kernel name) carries no instruction
        try:
            rows.append(
                (
                    int(r[col["LineNumber"]]),
                    int(r[col["Vaddr"]]),
                    isa,
                    str(r[col["Source"]] or ""),
                    int(r[col["Hit"]]),
                    int(r[col["Latency"]]),
                    int(r[col["Stall"]]),
                    int(r[col["Idle"]]),
                )
            )
        except (TypeError, ValueError) as exc:
            raise _bad(path, f"row {i}: a numeric column is not a number ({exc})") from exc
    if not rows:
        raise _bad(path, "has no instruction rows", "was the kernel traced? check --kernel-include-regex")
    return CodeTable(version=version, rows=rows)


def _walk_wave_files(node: Any, keys: tuple[str, ...], out: list[tuple[tuple[str, ...], list[Any]]]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _walk_wave_files(v, (*keys, str(k)), out)
    elif isinstance(node, list) and node and isinstance(node[0], str):
        out.append((keys, node))


def read_wave_list(folder: Path, warnings: list[str]) -> list[WaveFileInfo]:
    fn = folder / "filenames.json"
    waves: list[WaveFileInfo] = []
    if fn.exists():
        doc = load_json(fn)
        if not isinstance(doc, dict) or not isinstance(doc.get("wave_filenames"), dict):
            raise _bad(fn, "no 'wave_filenames' map")
        if str(doc.get("version", "3")).split(".")[0] not in SUPPORTED_MAJOR:
            raise _bad(fn, f"unknown ATT format version {doc.get('version')!r}")
        found: list[tuple[tuple[str, ...], list[Any]]] = []
        _walk_wave_files(doc["wave_filenames"], (), found)
        for keys, entry in found:
            if len(entry) < 3 or not all(isinstance(x, int) for x in entry[1:3]) or not keys[0].isdigit():
                raise _bad(fn, f"wave entry {keys}: {entry!r} is not [file, begin, end] under an SE number")
            waves.append(WaveFileInfo(folder / Path(str(entry[0])).name, int(keys[0]), entry[1], entry[2]))
    else:
        warnings.append("filenames.json missing: per-wave files found by name")
        for p in sorted(folder.glob("se*_sm*_sl*_wv*.json")):
            m = WAVE_RE.match(p.name)
            if m:
                waves.append(WaveFileInfo(p, int(m.group(1)), 0, 0))
    return waves


_OPEN, _CLOSE = ord("["), ord("]")
_EMPTY_VALUE = re.compile(rb":\s*(?=[,}])")


def scan_wave(info: WaveFileInfo, chunk: int = CHUNK) -> dict[str, Any]:
    """Stream one per-wave JSON: its scalar fields plus the element count of each array, in bounded memory.

    Bracket depth is tracked with numpy over each chunk; text outside every array
    (`{"duration":..,"wave":{..}}`)
    is kept and parsed, array element counts come from the opening brackets one level down.
    """
    path = info.path
    depth = 0
    outside: list[bytes] = []
    counts: list[int] = []
    size = 0
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise _bad(path, "missing (listed in filenames.json)") from exc
    with fh:
        while True:
            buf = fh.read(chunk)
            if not buf:
                break
            size += len(buf)
            b = np.frombuffer(buf, np.uint8)
            opens = b == _OPEN
            step = opens.view(np.int8) - (b == _CLOSE).view(np.int8)
            # int16 depth: twice the speed of int32; nesting past 32767 wraps negative and is refused below
            d = np.cumsum(step, dtype=np.int16)
            d += depth
            if int(d.min()) < 0:
                raise _bad(path, "unbalanced or absurdly deep brackets (not a per-wave JSON)")
            at = np.flatnonzero(opens)  # '[' are few: classify them by the depth they open
            lvl = d[at]
            starts, elems = at[lvl == 1], at[lvl == 2]
            per = np.bincount(np.searchsorted(starts, elems, side="right"), minlength=starts.size + 1)
            if counts:
                counts[-1] += int(per[0])
            counts.extend(int(c) for c in per[1:])
            # depth 0 holds the text outside every array, plus the ']' that closes one (dropped)
            outside.append(b[d == 0].tobytes().replace(b"]", b""))
            depth = int(d[-1])
    info.size_bytes = size
    if depth != 0:
        raise _bad(path, "truncated JSON (an array is never closed)")
    text = _EMPTY_VALUE.sub(b":null", b"".join(outside))
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise _bad(path, f"truncated or invalid JSON ({exc})") from exc
    wave = doc.get("wave") if isinstance(doc, dict) else None
    if not isinstance(wave, dict):
        raise _bad(path, "no 'wave' object (not a per-wave ATT file)")
    arrays = [k for k, v in wave.items() if v is None]
    return {"doc": doc, "wave": wave, "arrays": dict(zip(arrays, counts, strict=False))}


def iter_waves(waves: list[WaveFileInfo]) -> Iterator[WaveFileInfo]:
    """Fill each wave's instruction count from its file (streamed); checks num_insts against the array."""
    for w in waves:
        got = scan_wave(w)
        doc, wave = got["doc"], got["wave"]
        n = doc.get("num_insts")
        ilen = got["arrays"].get("instructions", 0)
        if not isinstance(n, int):
            raise _bad(w.path, "no integer num_insts")
        if n != ilen:
            raise _bad(w.path, f"num_insts={n} but {ilen} instruction records (truncated or edited file)")
        w.num_insts, w.instructions_len = n, ilen
        if not w.begin and not w.end:
            b, e = wave.get("begin", 0), wave.get("end", 0)
            if not isinstance(b, int) or not isinstance(e, int):
                raise _bad(w.path, "wave begin/end are not integers")
            w.begin, w.end = b, e
        yield w


def read_wstates(folder: Path) -> dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    out: dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = {}
    for p in sorted(folder.glob("wstates*.json")):
        m = re.fullmatch(r"wstates(\d+)\.json", p.name)
        if not m:
            continue
        doc = load_json(p)
        if not isinstance(doc, dict) or "state" not in doc or "time" not in doc:
            raise _bad(p, "no 'state'/'time' arrays")
        try:
            s = np.asarray(doc["state"], dtype=np.int64)
            t = np.asarray(doc["time"], dtype=np.int64)
        except (TypeError, ValueError) as exc:
            raise _bad(p, f"'state'/'time' are not integer arrays ({exc})") from exc
        if s.shape != t.shape or s.ndim != 1:
            raise _bad(p, f"'state' ({s.size}) and 'time' ({t.size}) differ in length")
        out[int(m.group(1))] = (s, t)
    return out


def read_snapshots(folder: Path) -> dict[str, Path]:
    p = folder / "snapshots.json"
    if not p.exists():
        return {}
    tree = load_json(p)
    out: dict[str, Path] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, prefix if k == "/" else f"{prefix}/{k}")
        elif isinstance(node, str):
            out[prefix or "/"] = folder / Path(node).name  # only files inside the folder

    walk(tree, "")
    return out


def read_folder(path: str, scan_waves: bool = True) -> Folder:
    folder = find_dispatch(path)
    code = read_code(folder / "code.json")
    f = Folder(path=folder, code=code)
    f.waves = read_wave_list(folder, f.warnings)
    if scan_waves:
        f.waves = list(iter_waves(f.waves))
    f.wstates = read_wstates(folder)
    if not f.wstates:
        f.warnings.append("no wstates*.json: wave-state split unavailable")
    occ = folder / "occupancy.json"
    if occ.exists():
        doc = load_json(occ)
        if not isinstance(doc, dict):
            raise _bad(occ, "not an object of per-SE event lists")
        for k, v in doc.items():
            if k == "dispatches" and isinstance(v, dict):
                f.dispatch_names = {str(a): str(b) for a, b in v.items()}
            elif isinstance(v, list):
                if any(
                    not isinstance(r, list) or len(r) < 5 or not all(isinstance(x, int) for x in r) for r in v
                ):
                    raise _bad(occ, f"SE {k}: rows are not [time, wave, simd, slot, start, dispatch]")
                f.occupancy[str(k)] = v
    rt = folder / "realtime.json"
    if rt.exists():
        doc = load_json(rt)
        f.realtime = doc if isinstance(doc, dict) else None
    f.snapshots = read_snapshots(folder)
    return f
