"""The surfaces of issue 34 as fuzz targets: Kineto traces, rocprofv3 and `nsys stats` CSVs, workload diff,
guard contracts, task.json and the task ledger, sweep specs and shape ledgers, workspace memory files,
experiment import and ingest.

Each `Surface` has real seed files, a `read` that writes the mutated bytes where the real reader looks and
calls the core function the command calls, a `cli` that gives the real command's argv for the same layout,
and `guarded`: the stored files (a sibling memory record, an experiment database with records in it) that
must be byte-for-byte (or record-for-record) the same after a command that failed.

Shared by `tests/fuzz/test_fuzz_surfaces.py` (a bounded, derandomized budget) and `bench/fuzz_surfaces.py`
(>= 1,000 cases per surface through the CLI). Mutations: those of `fuzz_targets` plus `hostile` ones, each
one of the failure classes of issue 34 put at a real place of the seed (a number made 1e999, NaN, 400 or
5,000 digits or negative, a string made a lone surrogate, a value nested 10,000 deep, a BOM, `;` or tab
delimiters, a renamed column, CRLF line ends).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fuzz_targets import _SPAN, FIXTURES, Op, _json_op, _op
from fuzz_targets import apply as apply_plain
from hypothesis import strategies as st

FUZZ = FIXTURES / "fuzz"
GUARD_CASES = FIXTURES.parent / "guard" / "cases"

Read = Callable[[bytes, Path], object]
Cli = Callable[[bytes, Path], list[str]]
Verdict = Callable[[Path, int, str], "str | None"]


@dataclass(frozen=True)
class Surface:
    name: str
    seeds: tuple[Path, ...]
    read: Read
    cli: Cli
    guarded: Callable[[Path], dict[str, str]] = field(default=lambda tmp: {})
    json: bool = False
    setup: Callable[[Path], object] = field(default=lambda tmp: None)  # what `guarded` watches, made first
    # issue 41: the outcome judged against what the case expects (exit code, stderr); None: typed or ok
    verdict: Verdict | None = None
    strict: bool = False  # `guarded` holds on success too (only the expected output may change)
    hostile: Callable[[bytes, int, int], bytes] | None = None  # the surface's own hostile changes


def _put(data: bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# ---- workload: traces, tables and results ----


def _trace_read(name: str) -> Read:
    def read(data: bytes, tmp: Path) -> object:
        from kernelpilot.workload.core import read_workload
        from kernelpilot.workload.models import WorkloadReadRequest

        res = read_workload(WorkloadReadRequest(path=str(_put(data, tmp / name))))
        res.model_dump_json()  # what --out writes: every value must serialise
        return res

    return read


def _trace_cli(name: str) -> Cli:
    def cli(data: bytes, tmp: Path) -> list[str]:
        p = _put(data, tmp / name)
        return ["workload", "read", str(p), "--out", str(tmp / "out.json"), "--html", str(tmp / "out.html")]

    return cli


_DIFF_A = FIXTURES / "workload" / "h100_decode_graph.json"


def _diff_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.workload.core import diff_workload
    from kernelpilot.workload.models import WorkloadDiffRequest

    res = diff_workload(WorkloadDiffRequest(a=str(_DIFF_A), b=str(_put(data, tmp / "b.json"))))
    res.render_text()
    return res


def _diff_cli(data: bytes, tmp: Path) -> list[str]:
    return ["workload", "diff", str(_DIFF_A), str(_put(data, tmp / "b.json"))]


# ---- tasks: task.json, the ledger, a guard contract ----


def _task_dir(tmp: Path) -> Path:
    return tmp / "repo" / ".kernelpilot" / "tasks" / "t"


def _task_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.tasks.evaluate import load_task

    return load_task(str(_put(data, _task_dir(tmp) / "task.json")))


def _task_cli(data: bytes, tmp: Path) -> list[str]:
    # eval reads task.json first; a valid one then stops at the missing baseline (typed, nothing run)
    _put(data, _task_dir(tmp) / "task.json")
    return ["eval", str(_task_dir(tmp))]


def _ledger_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.tasks.ledger import ledger_show
    from kernelpilot.tasks.models import LedgerRequest

    res = ledger_show(LedgerRequest(task=str(_put(data, tmp / "t" / "ledger.jsonl"))))
    res.render_text()
    return res


def _ledger_cli(data: bytes, tmp: Path) -> list[str]:
    return ["ledger", str(_put(data, tmp / "t" / "ledger.jsonl"))]


def _contract_dir(tmp: Path) -> Path:
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(GUARD_CASES / "contract_axpy.py", work / "contract_axpy.py")
    shutil.copy(GUARD_CASES / "honest_axpy.py", work / "kernel.py")
    return work


def _contract_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.tasks.create import load_contract

    work = _contract_dir(tmp)
    _put(data, work / "contract.json")
    return load_contract("contract.json", work, ["kernel.py"])


def _contract_cli(data: bytes, tmp: Path) -> list[str]:
    work = _contract_dir(tmp)
    _put(data, work / "contract.json")
    return ["task", "create", "--name", "c", "--contract", "contract.json", "--allowed-file", "kernel.py",
            "--workdir", str(work), "--task-dir", str(tmp / "taskdir")]  # fmt: skip


# ---- sweep: the spec and the shape ledger ----

_SWEEP = FIXTURES / "sweep"


def _sweep_dir(tmp: Path) -> Path:
    d = tmp / "sweep"
    d.mkdir(parents=True, exist_ok=True)
    for name in ("kernels.py", "sweep.toml", "shapes.jsonl"):
        if not (d / name).exists():
            shutil.copy(_SWEEP / name, d / name)
    return d


def _sweep_read(file: str) -> Read:
    def read(data: bytes, tmp: Path) -> object:
        from kernelpilot.sweep.records import sweep_record
        from kernelpilot.sweep.spec import load

        d = _sweep_dir(tmp)
        _put(data, d / file)
        loaded = load(str(d / "sweep.toml"))
        return sweep_record(loaded, None)  # the record `sweep run` stores first: every value must build it

    return read


def _sweep_cli(file: str) -> Cli:
    def cli(data: bytes, tmp: Path) -> list[str]:
        d = _sweep_dir(tmp)
        _put(data, d / file)
        # a spec that reads cleanly stops at the unreachable scheduler (typed): nothing is measured
        return ["sweep", "run", str(d / "sweep.toml"), "--db", str(tmp / "sweep.db"),
                "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout-s", "0.5"]  # fmt: skip

    return cli


# ---- workspace memory ----


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "workspace.json").write_text('{"name": "ws", "kernel_file": "vector_add.cu"}', encoding="utf-8")
    if not (ws / "memory" / "v0.json").exists():
        shutil.copyfile(FUZZ / "memory_v0.json", ws / "memory" / "v0.json")
    return ws


def _memory_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.workspace.memory import memory_summary
    from kernelpilot.workspace.models import MemorySummaryRequest

    ws = _workspace(tmp)
    _put(data, ws / "memory" / "v1.json")
    res = memory_summary(MemorySummaryRequest(workspace=str(ws), include_masked=True))
    res.render_text()
    return res


def _memory_cli(data: bytes, tmp: Path) -> list[str]:
    ws = _workspace(tmp)
    _put(data, ws / "memory" / "v1.json")
    return ["memory", "summary", "--workspace", str(ws), "--include-masked"]


def _memory_guarded(tmp: Path) -> dict[str, str]:
    return {"memory/v0.json": _sha(tmp / "ws" / "memory" / "v0.json")}


# ---- experiments: import (JSONL export) and ingest (eval result.json / ledger) ----


def _db(tmp: Path) -> Path:
    """An experiment store holding the seed export's 8 records (made once per process, copied per folder)."""
    db = tmp / "exp.db"
    if not db.exists():
        tmp.mkdir(parents=True, exist_ok=True)
        if not _DB_TEMPLATE or not _DB_TEMPLATE[-1].exists():  # (a test's temp folder may be gone)
            from kernelpilot.experiments.backends import open_store
            from kernelpilot.experiments.ops import read_jsonl_records

            made = Path(tempfile.mkdtemp(prefix="kp-fuzz-db-")) / "exp.db"
            store = open_store(str(made))
            try:
                store.create(read_jsonl_records(FUZZ / "experiments_export.jsonl"))
            finally:
                store.close()  # the last close checkpoints the WAL: the one file holds everything
            _DB_TEMPLATE.append(made)
        shutil.copyfile(_DB_TEMPLATE[-1], db)
    return db


_DB_TEMPLATE: list[Path] = []


def _db_guarded(tmp: Path) -> dict[str, str]:
    db = tmp / "exp.db"
    if not db.exists():
        return {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, doc FROM records ORDER BY id").fetchall()
    finally:
        conn.close()
    return {"exp.db records": hashlib.sha256(json.dumps(rows).encode()).hexdigest()}


def _import_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.experiments.api import ExpImportRequest
    from kernelpilot.experiments.ops import import_records

    db = _db(tmp)
    return import_records(
        ExpImportRequest(db=str(db), path=str(_put(data, tmp / "in.jsonl")), on_conflict="skip")
    )


def _import_cli(data: bytes, tmp: Path) -> list[str]:
    db = _db(tmp)
    return ["exp", "import", "--db", str(db), "--on-conflict", "skip", str(_put(data, tmp / "in.jsonl"))]


def _ingest_name(data: bytes) -> str:
    """A ledger when its first line is a whole object (one per line); else a pretty-printed result.json."""
    return "ledger.jsonl" if data.split(b"\n", 1)[0].rstrip().endswith(b"}") else "result.json"


def _ingest_read(data: bytes, tmp: Path) -> object:
    from kernelpilot.experiments.api import ExpIngestRequest
    from kernelpilot.experiments.ops import ingest

    db = _db(tmp)
    path = _put(data, tmp / _ingest_name(data))
    res = ingest(ExpIngestRequest(db=str(db), path=str(path), operator="softmax"))
    res.render_text()
    return res


def _ingest_cli(data: bytes, tmp: Path) -> list[str]:
    db = _db(tmp)
    return [
        "exp",
        "ingest",
        "--db",
        str(db),
        "--operator",
        "softmax",
        str(_put(data, tmp / _ingest_name(data))),
    ]


def _sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


WL = FIXTURES / "workload"
EXP = FIXTURES / "experiments"
_KT, _KC = _trace_read("t.json"), _trace_read("k.csv")
_KTC, _KCC = _trace_cli("t.json"), _trace_cli("k.csv")
SURFACES: tuple[Surface, ...] = (
    Surface("kineto_trace", (FUZZ / "kineto_decode_graph_1step.json",), _KT, _KTC, json=True),
    Surface("rocprof_trace_csv", (WL / "mi350x_flash_attn_kernel_trace.csv",), _KC, _KCC),
    Surface("rocprof_stats_csv", (WL / "mi350x_flash_attn_kernel_stats.csv",), _KC, _KCC),
    Surface("nsys_gpu_trace_csv", (FUZZ / "nsys_gpu_trace.csv",), _KC, _KCC),
    Surface("nsys_kern_sum_csv", (FUZZ / "nsys_kern_sum.csv",), _KC, _KCC),
    Surface("workload_diff", (_DIFF_A,), _diff_read, _diff_cli, json=True),
    Surface("guard_contract", (FUZZ / "contract.json",), _contract_read, _contract_cli, json=True),
    Surface("task_json", (FUZZ / "task.json",), _task_read, _task_cli, json=True),
    Surface("task_ledger", (EXP / "ledger.jsonl",), _ledger_read, _ledger_cli, json=True),
    Surface("sweep_spec", (_SWEEP / "sweep.toml",), _sweep_read("sweep.toml"), _sweep_cli("sweep.toml")),
    Surface(
        "sweep_ledger",
        (_SWEEP / "shapes.jsonl",),
        _sweep_read("shapes.jsonl"),
        _sweep_cli("shapes.jsonl"),
        json=True,
    ),
    Surface(
        "memory_json",
        (FUZZ / "memory_v1.json",),
        _memory_read,
        _memory_cli,
        _memory_guarded,
        True,
        _workspace,
    ),
    Surface(
        "exp_import", (FUZZ / "experiments_export.jsonl",), _import_read, _import_cli, _db_guarded, True, _db
    ),
    Surface(
        "exp_ingest",
        (EXP / "result_improved.json", EXP / "ledger.jsonl"),
        _ingest_read,
        _ingest_cli,
        _db_guarded,
        True,
        _db,
    ),
)


def _surfaces_41() -> tuple[Surface, ...]:
    """Issue 41's surfaces (`surfaces_41`): output paths, the citation audit, gzip traces, ncu raw pages."""
    import surfaces_41 as s41

    return (
        Surface("output_paths", (s41.TRACE,), s41.output_read, s41.output_cli, s41.guarded,
                verdict=s41.output_verdict, strict=True),
        Surface("citation_audit", (_audit_seed(),), s41.audit_read, s41.audit_cli, s41.guarded,
                verdict=s41.audit_verdict, strict=True, hostile=s41.hostile_audit),
        Surface("gzip_trace", s41.gz_seeds(), s41.gz_read, s41.gz_cli, hostile=s41.hostile_gzip),
        Surface("ncu_raw_csv", s41.NCU_SEEDS, s41.ncu_read, s41.ncu_cli),
    )  # fmt: skip


def _audit_seed() -> Path:
    """The audit note seed, written once per process beside the gzip seeds (it cites the fixture wiki)."""
    import surfaces_41 as s41

    p = Path(tempfile.gettempdir()) / "kp-fuzz-gz-seeds" / "audit_note.md"
    p.parent.mkdir(exist_ok=True)
    if not p.exists() or p.read_bytes() != s41.audit_seed():
        p.write_bytes(s41.audit_seed())
    return p


SURFACES = SURFACES + _surfaces_41()
BY_NAME = {s.name: s for s in SURFACES}
_HOSTILE = {seed: s.hostile for s in SURFACES if s.hostile for seed in s.seeds}

# ---- hostile mutations: each failure class of issue 34 at a real place of the seed ----

_NUMBER = re.compile(rb"(?<![\w.\"])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_NUMBERS = (b"1e999", b"-1e999", b"NaN", b"Infinity", b"-Infinity", b"9" * 400, b"9" * 5000, b"-5", b"-0.5",
            b"1e-400", b"nan", b"inf", b"-inf", b"18446744073709551617", b"1e308")  # fmt: skip
_STRINGS = (b'"\\ud800"', b'"x\\udfff"', b'"\\ud83d"', b'"' + b"K" * 300_000 + b'"')
_CSV_NUMBERS = (b"inf", b"nan", b"-1", b"1e400", b"9" * 400, b"-inf", b"", b"1,5")


def _hostile(data: bytes, where: int, num: int) -> bytes:
    """One hostile change, picked by `num`, at the match picked by `where`."""
    k = num % 12
    if k == 0:  # a number made non-finite, huge, negative or long
        found = list(_NUMBER.finditer(data))
        if found:
            m = found[where % len(found)]
            pick = _NUMBERS if data.lstrip()[:1] in b"{[" or b"=" in data[:400] else _CSV_NUMBERS + _NUMBERS
            return data[: m.start()] + pick[(where // 7) % len(pick)] + data[m.end() :]
    elif k == 1:  # a string made a lone surrogate (or 300,000 characters)
        found = list(_STRING.finditer(data))
        if found:
            m = found[where % len(found)]
            return data[: m.start()] + _STRINGS[(where // 7) % len(_STRINGS)] + data[m.end() :]
    elif k == 2:  # a value nested 10,000 (or 60) levels deep
        found = list(_NUMBER.finditer(data))
        if found:
            m = found[where % len(found)]
            depth = 10_000 if where % 2 else 60
            return data[: m.start()] + b"[" * depth + b"1" + b"]" * depth + data[m.end() :]
    elif k == 3:
        return b"\xef\xbb\xbf" + data  # a UTF-8 BOM
    elif k == 4:
        return data.replace(b",", b";")  # another delimiter (and broken JSON)
    elif k == 5:
        return data.replace(b",", b"\t")
    elif k == 6:
        return data.replace(b"\n", b"\r\n")
    elif k == 7:  # a header cell or key renamed
        head = data.split(b"\n", 1)[0]
        cells = [c for c in re.split(rb"[,;\t]", head) if c.strip()]
        if cells:
            old = cells[where % len(cells)]
            return data.replace(old, b"X" + old.strip(b'"') + b"X", 1)
    elif k == 8:  # a duration made negative
        return data.replace(b'"dur": ', b'"dur": -', 1 + where % 3)
    elif k == 9:  # a line or record repeated many times
        lines = data.split(b"\n")
        if len(lines) > 2:
            i = 1 + where % (len(lines) - 1)
            return b"\n".join(lines[:i] + [lines[i]] * 200 + lines[i:])
    elif k == 10:  # a huge count (a hang if believed)
        return re.sub(rb'"(runs|warmup|seeds|n|rows|cols|Calls|Instances)": \d+', rb'"\1": 1' + b"0" * 60,
                      data, count=1 + where % 3)  # fmt: skip
    return data


_hostile_op = st.tuples(st.just("hostile"), st.integers(0, _SPAN), st.integers(0, 1 << 16), st.just(b""))


def mutations(surface: Surface) -> st.SearchStrategy[tuple[Path, list[Op]]]:
    """A seed and 1-4 mutations; one in three is hostile (for JSON surfaces, one in three structural)."""
    parts = [_op, _hostile_op, _hostile_op] + ([_json_op] if surface.json else [])
    return st.tuples(st.sampled_from(surface.seeds), st.lists(st.one_of(*parts), min_size=1, max_size=4))


def apply(seed: Path, ops: list[Op]) -> bytes:
    """The seed's bytes after each mutation in turn (hostile ones here, the rest as `fuzz_targets.apply`)."""
    data = _SEEDS.setdefault(seed, seed.read_bytes())
    own = _HOSTILE.get(seed)
    for op in ops:
        if op[0] == "hostile":  # a surface with hostile changes of its own takes one of them in two
            data = own(data, op[1], op[2]) if own and op[2] % 2 == 0 else _hostile(data, op[1], op[2] // 2)
        else:
            data = _apply_bytes(data, op)
    return data


_SEEDS: dict[Path, bytes] = {}


def _apply_bytes(data: bytes, op: Op) -> bytes:
    """`fuzz_targets.apply` on bytes in hand: it reads its seed through a cache, which holds them here."""
    import fuzz_targets

    key = Path("/nonexistent/kp-fuzz-current")
    fuzz_targets._cache[key] = data
    try:
        return apply_plain(key, [op])
    except RecursionError:  # a structural change of a document a hostile change nested 10,000 deep: skipped
        return data
    finally:
        del fuzz_targets._cache[key]


def check(surface: Surface, data: bytes, tmp: Path) -> str | BaseException:
    """Run the core reader: "ok", "typed" (a `KernelpilotError`, guarded files unchanged) or the stray
    exception (an `AssertionError` when a failed read changed a guarded file)."""
    from kernelpilot.foundation.errors import KernelpilotError

    surface.setup(tmp)
    before = surface.guarded(tmp)
    try:
        result = surface.read(data, tmp)
    except KernelpilotError as exc:
        if surface.guarded(tmp) != before:
            return AssertionError(f"{surface.name}: a failed read changed {surface.guarded(tmp)}")
        wrong = surface.verdict(tmp, exc.exit_code, "kernelpilot: error:") if surface.verdict else None
        return AssertionError(f"{surface.name}: {wrong}") if wrong else "typed"
    except Exception as exc:  # the fuzzer's job: report anything that is not a typed error
        return exc
    if surface.strict and surface.guarded(tmp) != before:
        return AssertionError(f"{surface.name}: a read changed {surface.guarded(tmp)}")
    code = result.cli_exit_code() if hasattr(result, "cli_exit_code") else 0  # an audit with problems: 1
    wrong = surface.verdict(tmp, code, "") if surface.verdict else None
    return AssertionError(f"{surface.name}: {wrong}") if wrong else "ok"
