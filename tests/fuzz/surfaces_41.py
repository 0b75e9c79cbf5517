"""The surfaces of issue 41 as fuzz targets (added to `surface_targets.SURFACES`):

- `output_paths`: every command that writes a file (`workload read --out/--html`, `workload report --out`,
  `roofline --svg`, `isa resources --manifest`, `exp export`) given one of `TARGETS`: a FIFO, a socket (the
  device-like target: tests never touch real device nodes), a directory, a link loop, a dangling link whose
  target folder is missing, `/proc/self/comm` and `/proc/self/mem`, a 256-byte name, a 5,000-byte path, a
  missing folder, a link to a FIFO, a path under a regular file, and the legitimate ones (a regular file, a
  new name, a link to a file, a dangling link into an existing folder, `--mkdir`). The command and the target
  are picked by the hash of the mutated seed, so a case replays.
- `citation_audit`: a workspace note citing a wiki copy (`labwiki`), mutated; the verdict is checked against
  an oracle written apart from the audit (`audit_oracle`): exit 0 only when every citation's path stays in
  the wiki and its value is a finite number equal to the cited line's. Hostile changes: a value made
  non-finite or 400 digits, a path made absolute, `..` or a link out of the wiki, a 100,000-character run.
- `gzip_trace`: a gzipped Kineto trace and rocprofv3 CSV, mutated after compression (flips, cuts) and with
  gzip's own hostile shapes: 300,000 empty members in front, a member that inflates to 1 GiB, zero padding.
- `ncu_raw_csv`: real recorded ncu raw pages through `profile parse` and `workload read`.

What may change: `guarded` snapshots the whole case folder (kind, link target, content hash of every entry)
right after the case is set up (`.kp-before.json`) and reports any difference but the one file the case
expects written (`.kp-expect.json`: "ok" with the allowed paths, or "refused"); `expect` says when the
outcome itself was wrong (a legitimate target refused, a hostile one written, an audit verdict off).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from fuzz_targets import FIXTURES

FUZZ = FIXTURES / "fuzz"
TRACE = FUZZ / "kineto_decode_graph_1step.json"
CUBIN = FIXTURES / "isa" / "nvidia" / "kernels.sm_100.cubin"
WIKI = FIXTURES / "wiki" / "gpu-wiki-index"
SNAP, EXPECT = ".kp-before.json", ".kp-expect.json"
_IGNORED = {SNAP, EXPECT, "stdout", "stderr"}


# ---- what a case changed ----


def _entry(p: Path) -> str:
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(p)
    if stat.S_ISREG(st.st_mode):
        with p.open("rb") as fh:
            return "file:" + hashlib.sha256(fh.read()).hexdigest()
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return f"special:{stat.S_IFMT(st.st_mode):o}"


def snapshot(tmp: Path) -> dict[str, str]:
    """Every entry under `tmp` (not following links): kind, link target or content hash."""
    out: dict[str, str] = {}
    for root, dirs, files in os.walk(tmp):
        for name in dirs + files:
            p = Path(root) / name
            rel = os.path.relpath(p, tmp)
            if rel not in _IGNORED:
                out[rel] = _entry(p)
    return out


def _seal(tmp: Path, expect: str, allowed: list[str]) -> None:
    """Record what is there now and what the command may change (called once the case is set up)."""
    (tmp / EXPECT).write_text(json.dumps({"expect": expect, "allowed": allowed}))
    (tmp / SNAP).write_text(json.dumps(snapshot(tmp)))


def guarded(tmp: Path) -> dict[str, str]:
    """{} when nothing but the allowed paths changed since `_seal`, else what changed."""
    if not (tmp / SNAP).exists():
        return {}
    allowed = set(json.loads((tmp / EXPECT).read_text())["allowed"])
    before = {k: v for k, v in json.loads((tmp / SNAP).read_text()).items() if k not in allowed}
    now = {k: v for k, v in snapshot(tmp).items() if k not in allowed}
    if now == before:
        return {}
    diff = sorted(set(now) ^ set(before)) + sorted(
        k for k in now.keys() & before.keys() if now[k] != before[k]
    )
    return {"changed": ", ".join(diff[:5])}


def expect(tmp: Path, ok: bool) -> str | None:
    """Why the outcome was wrong for this case (None: right)."""
    p = tmp / EXPECT
    if not p.exists():
        return None
    doc = json.loads(p.read_text())
    if doc["expect"] == "ok" and not ok:
        return "refused a legitimate case"
    if doc["expect"] == "refused" and ok:
        return "accepted a case it must refuse"
    for rel in doc["allowed"] if ok and doc["expect"] == "ok" else []:
        q = tmp / rel
        if q.is_dir() and not q.is_symlink():
            continue  # a folder --mkdir made
        if q.is_symlink() or not q.is_file() or q.stat().st_size == 0:
            return f"the written file {rel} is not a non-empty regular file"
    return None


def _pick(data: bytes, n: int, salt: bytes) -> int:
    return int.from_bytes(hashlib.sha256(salt + data).digest()[:8], "big") % n


# ---- output paths ----

TARGETS = (
    "fifo", "socket", "directory", "loop", "dangling_missing", "proc_comm", "proc_mem", "long_name",
    "long_path", "missing_folder", "link_fifo", "under_file",
    "regular", "new_name", "link_regular", "dangling_ok", "mkdir", "dot_dot",
)  # fmt: skip
_REFUSED = set(TARGETS[:12])


def _make_target(kind: str, tmp: Path, name: str) -> tuple[str, list[str]]:
    """Create the hostile (or legitimate) target; (path to pass, paths the command may write)."""
    t = tmp / name
    if kind in ("fifo", "link_fifo"):
        os.mkfifo(tmp / "pipe")
        if kind == "link_fifo":
            t.symlink_to(tmp / "pipe")
        return str(t if kind == "link_fifo" else tmp / "pipe"), []
    if kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(t))
        s.close()  # the socket file stays: a special file, as a device node is
        return str(t), []
    if kind == "directory":
        t.mkdir()
        return str(t), []
    if kind == "loop":
        t.symlink_to(t)
        return str(t), []
    if kind == "dangling_missing":
        t.symlink_to(tmp / "gone" / "x.json")
        return str(t), []
    if kind in ("proc_comm", "proc_mem"):
        return "/proc/self/" + kind[5:], []
    if kind == "long_name":
        return str(tmp / ("n" * 256)), []
    if kind == "long_path":
        return str(tmp / "/".join(["d" * 100] * 50)), []
    if kind == "missing_folder":
        return str(tmp / "nope" / name), []
    if kind == "under_file":
        (tmp / "plain").write_text("x")
        return str(tmp / "plain" / name), []
    return _make_legit(kind, tmp, name)


def _make_legit(kind: str, tmp: Path, name: str) -> tuple[str, list[str]]:
    t = tmp / name
    if kind == "regular":
        t.write_text("old")
        return str(t), [name]
    if kind == "link_regular":
        (tmp / "real.out").write_text("old")
        t.symlink_to(tmp / "real.out")
        return str(t), ["real.out"]
    if kind == "dangling_ok":
        (tmp / "there").mkdir()
        t.symlink_to(tmp / "there" / "x.out")
        return str(t), ["there/x.out"]
    if kind == "mkdir":
        return str(tmp / "m1" / "m2" / name), ["m1", "m1/m2", f"m1/m2/{name}"]
    if kind == "dot_dot":
        (tmp / "sub").mkdir()
        return str(tmp / "sub" / ".." / name), [name]
    return str(t), [name]  # new_name


_RESULT: list[Path] = []


def _workload_result() -> Path:
    """A `workload read --out` result of the trace (made once per process), for `workload report`."""
    if not _RESULT or not _RESULT[-1].exists():
        from kernelpilot.workload.core import read_workload
        from kernelpilot.workload.models import WorkloadReadRequest

        made = Path(tempfile.mkdtemp(prefix="kp-fuzz-res-")) / "r.json"
        made.write_text(read_workload(WorkloadReadRequest(path=str(TRACE))).model_dump_json())
        _RESULT.append(made)
    return _RESULT[-1]


def _writers(tmp: Path, t: str) -> list[tuple[list[str], bool]]:
    """(argv, takes --mkdir) of each writing command with `t` as its output."""
    from surface_targets import _db

    result = tmp / "r.json"
    if not result.exists():
        shutil.copyfile(_workload_result(), result)
    db = _db(tmp)
    return [
        (["workload", "read", str(TRACE), "--out", t], True),
        (["workload", "read", str(TRACE), "--html", t], True),
        (["workload", "report", str(result), "--out", t], True),
        (
            [
                "roofline",
                "h100-sxm5",
                "--op",
                "gemm",
                "--m",
                "256",
                "--n",
                "256",
                "--k",
                "256",
                "--dtype",
                "bf16",
                "--svg",
                t,
            ],
            False,
        ),
        (["isa", "resources", str(CUBIN), "--manifest", t], False),
        (["exp", "export", "--db", str(db), t], False),
    ]


def _output_case(data: bytes, tmp: Path) -> list[str]:
    """Set the case up from the hash of `data`: a command and a target; returns the command's argv."""
    tmp.mkdir(parents=True, exist_ok=True)
    writers = _writers(tmp, "T")
    argv, mkdir = writers[_pick(data, len(writers), b"cmd")]
    kind = TARGETS[_pick(data, len(TARGETS), b"target")]
    if kind == "mkdir" and not mkdir:
        kind = "new_name"
    name = "out-" + hashlib.sha256(data).hexdigest()[:8] + ".json"
    path, allowed = _make_target(kind, tmp, name)
    argv = [path if a == "T" else a for a in argv] + (["--mkdir"] if kind == "mkdir" else [])
    _seal(tmp, "refused" if kind in _REFUSED else "ok", allowed)
    return argv


def output_cli(data: bytes, tmp: Path) -> list[str]:
    return _output_case(data, tmp)


def output_read(data: bytes, tmp: Path) -> object:
    """The same case through the core functions the commands call (what `check` runs)."""
    argv = _output_case(data, tmp)
    return _core(argv)


def _core(argv: list[str]) -> object:
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    mkdir = "--mkdir" in argv
    if argv[:2] == ["workload", "read"]:
        from kernelpilot.workload.core import read_workload
        from kernelpilot.workload.models import WorkloadReadRequest

        html = argv[argv.index("--html") + 1] if "--html" in argv else None
        return read_workload(WorkloadReadRequest(path=argv[2], out=out, html=html, mkdir=mkdir))
    if argv[:2] == ["workload", "report"]:
        from kernelpilot.workload.core import report_workload
        from kernelpilot.workload.models import WorkloadReportRequest

        return report_workload(WorkloadReportRequest(path=argv[2], out=out or "", mkdir=mkdir))
    if argv[0] == "roofline":
        from kernelpilot.roofline.core import run_roofline
        from kernelpilot.roofline.models import RooflineRequest

        svg = argv[argv.index("--svg") + 1]
        return run_roofline(
            RooflineRequest(gpu="h100-sxm5", op="gemm", m=256, n=256, k=256, dtype="bf16", svg=svg)
        )
    if argv[:2] == ["isa", "resources"]:
        from kernelpilot.isa.api import IsaResourcesRequest
        from kernelpilot.isa.core import isa_resources

        return isa_resources(IsaResourcesRequest(file=argv[2], manifest=argv[argv.index("--manifest") + 1]))
    from kernelpilot.experiments.api import ExpExportRequest
    from kernelpilot.experiments.ops import export_records

    return export_records(ExpExportRequest(db=argv[argv.index("--db") + 1], out=argv[-1]))


# ---- the citation audit ----

_LABWIKI = "labwiki"
_SPEC = re.compile(r"^- ([a-z][a-z0-9_]*): (\S+) (\S+) \| ")


def _wiki_copy(tmp: Path) -> Path:
    wiki = tmp / _LABWIKI
    if not wiki.exists():
        shutil.copytree(WIKI, wiki)
        (tmp / "secret.md").write_text((WIKI / "nvidia" / "h100-sxm5.md").read_text())  # outside the wiki
        (wiki / "nvidia" / "out.md").symlink_to(tmp / "secret.md")
    return wiki


def audit_seed() -> bytes:
    """A note citing every spec line of the wiki copy's H100 and MI300X files, each correctly."""
    lines = []
    for rel in ("nvidia/h100-sxm5.md", "amd/mi300x.md"):
        for i, ln in enumerate((WIKI / rel).read_text().splitlines(), start=1):
            m = _SPEC.match(ln)
            if m:
                lines.append(f"- {m[1]}: {m[2]} {m[3]} <- {_LABWIKI}/{rel}:L{i}")
    return ("# Notes\n\n" + "\n".join(lines) + "\n").encode()


def _wiki_value(path: Path, line: int) -> tuple[str, str, str] | None:
    """(metric, value text, unit) the wiki file states on that line, read apart from the audit's parser."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not 1 <= line <= len(lines):
        return None
    m = _SPEC.match(lines[line - 1])
    return (m[1], m[2], m[3]) if m else None


def _number_ok(text: str) -> bool:
    """The policy's numbers: at most 40 digits, finite, not a nonzero that reads as 0."""
    mantissa = re.split("[eE]", text, maxsplit=1)[0]
    if sum(ch.isdigit() for ch in mantissa) > 40:
        return False
    v = float(text)
    return math.isfinite(v) and (v != 0.0 or mantissa.strip("+-0.") == "")


def _cited_ok(metric: str, value: str, unit: str, path: str, line: int, wiki: Path) -> bool:
    first, _, rest = path.partition("/")
    parts = rest.split("/")
    if first != _LABWIKI or not rest or rest.startswith("/") or ".." in parts or "" in parts or "\\" in rest:
        return False  # the path must name a file inside the wiki plainly (no '..', '//', backslash)
    disk = wiki / rest
    try:
        if not disk.resolve().is_relative_to(wiki.resolve()) or not disk.is_file():
            return False
    except (OSError, RuntimeError):
        return False
    stated = _wiki_value(disk, line)
    if stated is None or stated[0] != metric or stated[2] != unit:
        return False
    if value.startswith('"') or stated[1].startswith('"'):
        return value == stated[1]
    try:
        a, b = float(value), float(stated[1])
    except ValueError:
        return False
    return _number_ok(value) and math.isfinite(b) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def audit_oracle(tmp: Path) -> bool:
    """True when every citation the note holds checks out by `_cited_ok` (the audit must then exit 0)."""
    from kernelpilot.wiki.audit import find_citations

    text = (tmp / "ws" / "note.md").read_bytes().decode("utf-8")
    return all(
        _cited_ok(c.metric, c.value_text, c.unit, c.path, c.line, tmp / _LABWIKI)
        for c in find_citations(text, "note.md", False)
    )


def _audit_case(data: bytes, tmp: Path) -> list[str] | None:
    """Put the note and the wiki copy in place; the expected verdict goes to `.kp-expect.json`."""
    tmp.mkdir(parents=True, exist_ok=True)
    wiki = _wiki_copy(tmp)
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "note.md").write_bytes(data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        _seal(tmp, "refused", [])  # not UTF-8: a typed error, no verdict
        return ["audit", str(ws), "--wiki", str(wiki), "--no-history"]
    _seal(tmp, "ok" if audit_oracle(tmp) else "problems", [])
    return ["audit", str(ws), "--wiki", str(wiki), "--no-history"]


def audit_cli(data: bytes, tmp: Path) -> list[str]:
    return _audit_case(data, tmp) or []


def audit_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.wiki import audit_paths, load_wiki

    _audit_case(data, tmp)
    res = audit_paths([tmp / "ws"], load_wiki([tmp / _LABWIKI], include_bundled=False), history=False)
    want = json.loads((tmp / EXPECT).read_text())["expect"]
    if (want == "ok") != res.ok:
        raise AssertionError(
            f"audit said ok={res.ok}, the oracle {want}: {[p.reason for p in res.problems][:3]}"
        )
    return res


def audit_verdict(tmp: Path, code: int, err: str) -> str | None:
    """The audit's exit against the oracle: 0 when it holds, 1 with a report when a citation does not, a
    typed error when the note is not UTF-8."""
    p = tmp / EXPECT
    if not p.exists():
        return None
    want = json.loads(p.read_text())["expect"]
    typed = "kernelpilot: error:" in err
    right = {"ok": code == 0, "problems": code == 1 and not typed, "refused": code in (1, 2) and typed}[want]
    return None if right else f"audit exit {code}, the oracle says {want}: {err[-200:]}"


def output_verdict(tmp: Path, code: int, err: str) -> str | None:
    return expect(tmp, code == 0)


def hostile_audit(data: bytes, where: int, num: int) -> bytes:
    """One hostile change of a citation: its value non-finite or absurd, its path out of the wiki, or a
    long identifier run (what made the pattern quadratic)."""
    cites = list(re.finditer(rb"(?<!\S)(\S{1,200}) (\S{1,64}) <- (\S{1,400}):L(\d{1,40})", data))  # linear
    k = num % 5
    if k == 4 or not cites:
        return data[: where % (len(data) + 1)] + b"a" * 100_000 + b": " + data[where % (len(data) + 1) :]
    m = cites[where % len(cites)]
    if k == 0:
        bad = (b"1e999", b"-1e999", b"1e309", b"9" * 400, b"inf", b"nan", b"-Infinity", b"1e-400")
        return data[: m.start(1)] + bad[(where // 7) % len(bad)] + data[m.end(1) :]
    paths = (
        b"labwiki//etc/hostname",
        b"labwiki/../secret.md",
        b"labwiki/nvidia/out.md",
        b"labwiki/nvidia/../../secret.md",
    )
    if k == 1:
        return data[: m.start(3)] + paths[(where // 7) % len(paths)] + data[m.end(3) :]
    if k == 2:  # the line number huge or past the end
        return data[: m.start(4)] + (b"9" * 30 if where % 2 else b"99999") + data[m.end(4) :]
    return data[: m.start(1)] + m[1] + b"1" + data[m.end(1) :]  # a digit more: a finite wrong value


# ---- gzip traces and ncu pages ----


def hostile_gzip(data: bytes, where: int, num: int) -> bytes:
    """gzip's own hostile shapes around a real gzipped trace."""
    empty = gzip.compress(b"", mtime=0)
    k = num % 5
    if k == 0:
        return empty * 300_000 + data  # 6 MB of empty members first
    if k == 1:  # a member that inflates to 1 GiB of zeros, then the trace
        block = b"\0" * (16 * 2**20)
        import zlib

        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        body = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
        head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
        return head + body * 64 + c.flush() + b"\0" * 8 + data
    if k == 2:
        return data + b"\0" * (where % 100_000)  # zero padding
    if k == 3:
        return data[: where % (len(data) + 1)]  # cut anywhere
    return data + data  # two members: a trace twice


def gz_seeds() -> tuple[Path, ...]:
    """The gzipped seeds (made once per process from the real traces: gzip -9, mtime 0)."""
    folder = Path(tempfile.gettempdir()) / "kp-fuzz-gz-seeds"
    folder.mkdir(exist_ok=True)
    out = []
    for src in (TRACE, FIXTURES / "workload" / "mi350x_flash_attn_kernel_trace.csv"):
        p = folder / (src.name + ".gz")
        if not p.exists():
            tmp = p.with_suffix(".part")
            tmp.write_bytes(gzip.compress(src.read_bytes(), 9, mtime=0))
            os.replace(tmp, p)
        out.append(p)
    return tuple(out)


def gz_cli(data: bytes, tmp: Path) -> list[str]:
    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / "t.gz"
    p.write_bytes(data)
    return ["workload", "read", str(p), "--out", str(tmp / "r.json")]


def gz_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.workload.core import read_workload
    from kernelpilot.workload.models import WorkloadReadRequest

    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / "t.gz"
    p.write_bytes(data)
    res = read_workload(WorkloadReadRequest(path=str(p)))
    res.model_dump_json()
    return res


NCU_SEEDS = (
    FIXTURES / "profile" / "ncu" / "minimal" / "launches50_min.csv",
    FIXTURES / "profile" / "ncu" / "gemm_tiled_raw.csv",
)


def ncu_cli(data: bytes, tmp: Path) -> list[str]:
    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / "raw.csv"
    p.write_bytes(data)
    if _pick(data, 2, b"ncu"):
        return ["profile", "parse", str(p)]
    return ["workload", "read", str(p), "--out", str(tmp / "r.json")]


def ncu_read(data: bytes, tmp: Path) -> object:
    tmp.mkdir(parents=True, exist_ok=True)
    p = tmp / "raw.csv"
    p.write_bytes(data)
    if _pick(data, 2, b"ncu"):
        from kernelpilot.profile.core import profile_parse
        from kernelpilot.profile.models import ProfileParseRequest

        res = profile_parse(ProfileParseRequest(path=str(p)))
    else:
        from kernelpilot.workload.core import read_workload
        from kernelpilot.workload.models import WorkloadReadRequest

        res = read_workload(WorkloadReadRequest(path=str(p)))  # type: ignore[assignment]
    res.model_dump_json()
    return res
