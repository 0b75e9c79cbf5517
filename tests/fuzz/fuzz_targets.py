"""Every file reader kernelpilot has, as fuzz targets: (format name, real seed files, reader function).

Shared by the CI test (`tests/fuzz/test_fuzz_readers.py`, a small budget) and the benchmark
(`bench/fuzz_readers.py`, >= 10,000 cases per format). A reader gets the mutated bytes and a scratch folder,
writes them where the real reader looks, and calls the same core function the CLI/MCP command does.
The contract under test: it returns, or raises a `KernelpilotError`; anything else is a bug.

To add a format, append one `Target` to `TARGETS` (as the ATT folder's code.json and wave files are).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

Reader = Callable[[bytes, Path], object]


@dataclass(frozen=True)
class Target:
    name: str
    seeds: tuple[Path, ...]
    read: Reader
    json: bool = False  # also mutate the JSON structure (a value replaced by another type; small inputs)


def _seeds(folder: str, *patterns: str) -> tuple[Path, ...]:
    base = FIXTURES / folder
    found = sorted({p for pat in patterns for p in base.glob(pat) if p.is_file()})
    if not found:
        raise FileNotFoundError(f"no seed files for {patterns} under {base}")
    return tuple(found)


def _write(data: bytes, tmp: Path, name: str) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def _isa(name: str) -> Reader:
    def read(data: bytes, tmp: Path) -> object:
        from kernelpilot.isa.api import IsaResourcesRequest
        from kernelpilot.isa.core import isa_resources

        return isa_resources(IsaResourcesRequest(file=str(_write(data, tmp, name))))

    return read


def _profile(kind: str) -> Reader:
    def read(data: bytes, tmp: Path) -> object:
        from kernelpilot.profile.core import profile_parse
        from kernelpilot.profile.models import ProfileParseRequest

        path = _write(data, tmp, f"fuzz.{'json' if kind == 'rocprof_json' else 'csv'}")
        return profile_parse(ProfileParseRequest(path=str(path), kind=kind))  # type: ignore[arg-type]

    return read


def _profile_auto(data: bytes, tmp: Path) -> object:
    from kernelpilot.profile.core import profile_parse
    from kernelpilot.profile.models import ProfileParseRequest

    return profile_parse(ProfileParseRequest(path=str(_write(data, tmp, "fuzz.csv"))))


def _ncu_source(data: bytes, tmp: Path) -> object:
    from kernelpilot.profile.core import profile_hotspots
    from kernelpilot.profile.models import HotspotsRequest

    return profile_hotspots(HotspotsRequest(path=str(_write(data, tmp, "fuzz_source.csv"))))


def _experiments_jsonl(data: bytes, tmp: Path) -> object:
    from kernelpilot.experiments.ops import read_jsonl_records

    return read_jsonl_records(_write(data, tmp, "records.jsonl"))


def _memory_json(data: bytes, tmp: Path) -> object:
    from kernelpilot.workspace.memory import memory_summary
    from kernelpilot.workspace.models import MemorySummaryRequest

    ws = tmp / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "workspace.json").write_text('{"name": "ws", "kernel_file": "vector_add.cu"}', encoding="utf-8")
    shutil.copyfile(FIXTURES / "fuzz" / "memory_v0.json", ws / "memory" / "v0.json")
    (ws / "memory" / "v1.json").write_bytes(data)
    return memory_summary(MemorySummaryRequest(workspace=str(ws), include_masked=True))


def _task_json(data: bytes, tmp: Path) -> object:
    from kernelpilot.tasks.evaluate import load_task

    task_dir = tmp / "repo" / ".kernelpilot" / "tasks" / "t"
    task_dir.mkdir(parents=True, exist_ok=True)
    return load_task(str(_write(data, task_dir, "task.json")))


def _att(name: str) -> Reader:
    """The small real ATT dispatch folder with its file `name` replaced by the mutated bytes."""

    def read(data: bytes, tmp: Path) -> object:
        from kernelpilot.profile.att.analysis import profile_att
        from kernelpilot.profile.att.models import AttRequest

        folder = tmp / ATT_DISPATCH.name
        shutil.copytree(ATT_DISPATCH, folder, dirs_exist_ok=True)
        (folder / name).write_bytes(data)
        return profile_att(AttRequest(path=str(folder)))

    return read


ATT_DISPATCH = FIXTURES / "profile" / "att" / "small" / "ui_output_agent_32235_dispatch_44"
WAVE = "se3_sm0_sl0_wv0.json"  # one wave's trace
NV = "isa/nvidia"
AMD = "isa/amd"
TARGETS: tuple[Target, ...] = (
    Target(
        "cubin",
        _seeds(NV, "kernels.sm_90.cubin", "kernels.sm_75.cubin", "reqntid.sm_90.cubin"),
        _isa("k.cubin"),
    ),
    Target(
        "fatbin_host",
        _seeds(NV, "host_app", "host_app_zstd", "host_app.fatbin", "host_app_lz4.fatbin"),
        _isa("app.bin"),
    ),
    Target("hsaco", _seeds(AMD, "k.gfx942.hsaco", "spill.gfx942.hsaco", "k.gfx1201.hsaco"), _isa("k.hsaco")),
    Target(
        "offload_bundle",
        _seeds(AMD, "bundle.hipfb", "bundle_compressed.hipfb", "hip_host.o"),
        _isa("b.hipfb"),
    ),
    Target("ncu_raw", _seeds("profile/ncu", "vector_add_raw.csv", "dep_chain_raw.csv"), _profile("ncu_raw")),
    Target(
        "ncu_details",
        _seeds("profile/ncu", "vector_add_details.csv", "dep_chain_details.csv"),
        _profile("ncu_details"),
    ),
    Target(
        "ncu_source",
        _seeds("profile/ncu", "vector_add_source.csv", "dep_chain_source_cuda_sass.csv"),
        _ncu_source,
    ),
    Target(
        "rocprof_trace",
        _seeds("profile/rocprofv3", "discover_kernel_trace.csv"),
        _profile("rocprof_trace"),
    ),
    Target(
        "rocprof_counters",
        _seeds("profile/rocprofv3", "synthetic_counter_collection.csv"),
        _profile("rocprof_counters"),
    ),
    Target(
        "rocprof_json",
        _seeds("profile/rocprofv3", "small_results.json", "synthetic_results.json"),
        _profile("rocprof_json"),
        json=True,
    ),
    Target(
        "profile_auto",
        _seeds("profile/rocprofv3", "discover_kernel_trace.csv")
        + _seeds("profile/ncu", "vector_add_raw.csv"),
        _profile_auto,
    ),
    Target("att_code_json", (ATT_DISPATCH / "code.json",), _att("code.json"), json=True),
    Target("att_wave_json", (ATT_DISPATCH / WAVE,), _att(WAVE), json=True),
    Target("experiments_jsonl", _seeds("fuzz", "experiments_export.jsonl"), _experiments_jsonl, json=True),
    Target("memory_json", _seeds("fuzz", "memory_v1.json"), _memory_json, json=True),
    Target("task_json", _seeds("fuzz", "task.json"), _task_json, json=True),
)
BY_NAME = {t.name: t for t in TARGETS}

# ---- mutations: truncation, byte flips, insertions, deletions of a real seed ----

_INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF, ord('"'), ord(","), ord("\n"), ord("\r"), ord("{"), ord("["))


_KINDS = ("flip", "flip", "flip", "insert", "insert", "delete", "delete", "truncate")  # truncation rarer

# One mutation: (kind, where, a number, a short byte string). Where is scaled to the data's length when the
# plan is applied, so the strategy draws small plans and never holds (or makes hypothesis keep) the bytes.
Op = tuple[str, int, int, bytes]
_SPAN = 1 << 24
_op = st.tuples(
    st.sampled_from(_KINDS),
    st.one_of(st.integers(0, _SPAN), st.sampled_from((0, 1, _SPAN - 1, _SPAN))),  # ends included often
    st.one_of(st.sampled_from(_INTERESTING), st.integers(0, 255), st.integers(256, 1 << 16)),
    st.binary(min_size=1, max_size=32),
)


_json_op = st.tuples(st.just("json"), st.integers(0, _SPAN), st.integers(0, 1 << 16), st.just(b""))


def mutations(target: Target) -> st.SearchStrategy[tuple[Path, list[Op]]]:
    """A seed and 1-8 mutations to apply to it in turn (for JSON formats, half of them structural)."""
    op = st.one_of(_op, _json_op) if target.json else _op
    return st.tuples(st.sampled_from(target.seeds), st.lists(op, min_size=1, max_size=8))


# What a structural mutation puts in place of a JSON value (or "drop": the key or item removed).
_JSON_VALUES: tuple[object, ...] = (
    None,
    True,
    0,
    -1,
    2**64,
    1e308,
    -1e-308,
    "",
    "x" * 300,
    "\u0000",
    [],
    {},
    [None],
    {"": None},
    "drop",
)


JSON_MUTATE_MAX_BYTES = 256 * 1024  # above this, parsing and re-writing per mutation costs ~0.1 s: bytes only


def _json_mutate(data: bytes, where: int, num: int) -> bytes:
    """Replace one value of a JSON document (or of one JSONL line) by a value of another type."""
    if len(data) > JSON_MUTATE_MAX_BYTES:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    lines = text.split("\n")
    docs: list[tuple[int, object]] = []
    for i, line in enumerate(lines if len(lines) > 1 and text.lstrip()[:1] != "[" else [text]):
        try:
            docs.append((i, json.loads(line)))
        except ValueError:
            continue
    if not docs:
        return data
    i, doc = docs[where % len(docs)]
    slots: list[tuple[object, object]] = []  # (container, key or index) of every value, depth first

    def walk(node: object) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items):
            slots.append((node, k))
            walk(v)

    walk(doc)
    new = _JSON_VALUES[num % len(_JSON_VALUES)]
    if not slots:
        doc = new
    else:
        node, key = slots[(where // 7) % len(slots)]
        if new == "drop":
            del node[key]  # type: ignore[attr-defined]
        else:
            node[key] = new  # type: ignore[index]
    out = json.dumps(doc)
    if len(docs) == 1 and len(lines) == 1:
        return out.encode()
    lines[i] = out
    return "\n".join(lines).encode()


def apply(seed: Path, ops: list[Op]) -> bytes:
    """The seed's bytes after truncations, byte flips, insertions (random bytes or a slice of the data
    itself: duplicated records, headers) and deletions."""
    data = bytearray(_bytes(seed))
    for kind, where, num, blob in ops:
        pos = where * len(data) // _SPAN
        if kind == "truncate":
            del data[pos:]
        elif kind == "flip" and pos < len(data):
            data[pos] = num & 0xFF
        elif kind == "insert":
            if num > 255 and data:
                start = (num * 7919) % len(data)
                blob = bytes(data[start : start + 1 + num % 512])
            data[pos:pos] = blob
        elif kind == "delete":
            del data[pos : pos + 1 + num % 256]
        elif kind == "json":
            data = bytearray(_json_mutate(bytes(data), where, num))
    return bytes(data)


_cache: dict[Path, bytes] = {}


def _bytes(path: Path) -> bytes:
    if path not in _cache:
        _cache[path] = path.read_bytes()
    return _cache[path]


def check(target: Target, data: bytes, tmp: Path) -> str | BaseException:
    """Run the reader: "ok" when it returned, "typed" when it raised a `KernelpilotError`, else the stray
    exception."""
    from kernelpilot.foundation.errors import KernelpilotError

    try:
        target.read(data, tmp)
    except KernelpilotError:
        return "typed"
    except Exception as exc:  # the fuzzer's job: report anything that is not a typed error
        return exc
    return "ok"
