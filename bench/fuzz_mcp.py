"""Benchmark: hostile MCP tool calls through the official client, every tool, five surfaces (issue 41).

Usage: python bench/fuzz_mcp.py [--cases N] [--seed S] [--only SURFACE ...] [--tools TOOL ...]

One in-process server (`build_server("all")`) driven by `mcp.Client(server)`, one call per case. A case
picks a tool and fills its required arguments with plain values, then, by surface:
- `wrong_types`: 1-3 arguments get a value of another JSON type (number for text, text for a list, an
  object, null, a 100- or 200-level nested list (the client serializes no deeper), a 400-digit integer);
- `huge_strings`: 1-3 text arguments get 10 k - 1 M characters (letters, brackets, a BOM before JSON, NUL,
  lone surrogates, line and paragraph separators);
- `input_paths`: the path-like arguments (`INPUT_ARGS`, else any text argument) name a hostile entry;
- `output_paths`: the output arguments (`OUTPUT_ARGS`: out, html, manifest, db, ...) name one;
- `json_arguments`: the JSON arguments (`*_json`, `JSON_ARGS`) get hostile JSON (`HOSTILE_JSON`: 100,000-deep
  arrays, 5,000-digit numbers, 1e999, NaN, surrogate and NUL escapes, a BOM, cut short, not UTF-8), inline
  or as the path of a sandbox file holding it.
Hostile entries live in a sandbox folder made here: a FIFO, a FIFO named like a device node (`dev_null`:
never a real device), a unix socket, a directory, a symlink loop, a dangling link, links to /proc/self/mem
and /dev/zero (links only: neither is opened by this bench), /proc/self/mem and /proc/self/status
themselves, a 300-byte name, a 5,000-character path, a missing parent folder. Cases replay:
`random.Random(f"{seed}/{surface}/{case}")`.

Outcomes: ok (no error), typed (a kernelpilot error class, an argument validation message or the unknown-
tool answer, each with `fix:`), traceback (an error the server did not expect: `unexpected_error_text`'s
answer names a non-kernelpilot class), untyped (any other error text, or an answer that cannot be encoded
as JSON for the stdio or HTTP transport: a lone surrogate), hang (the call hit its MCP time limit,
`KERNELPILOT_MCP_TOOL_TIMEOUT_S`, or the bench's own limit), memory (a MemoryError), changed (anything in the
sandbox changed that the call was not asked to write, or the store changed by a call that failed: only a
successful call may create or replace a regular file it named in an output argument (`OUTPUT_ARGS`), write
inside a folder it named there (a new one, or an existing one for the folder arguments, `FOLDER_ARGS`), or
make the missing folders on the way to one).
Last line: figure=<tracebacks + hangs + untyped errors + memory + changed files> (cases, surfaces, peak RSS).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import platform
import random
import reprlib
import resource
import shutil
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "server"))

SURFACES = ("wrong_types", "huge_strings", "input_paths", "output_paths", "json_arguments")
OUTCOMES = ("ok", "typed", "traceback", "untyped", "hang", "memory", "changed")
BAD = ("traceback", "untyped", "hang", "memory", "changed")
CALL_LIMIT_S = 20.0  # the server's limit per call (KERNELPILOT_MCP_TOOL_TIMEOUT_S, both kinds)
BENCH_LIMIT_S = 90.0  # past this the bench gives up on a call itself (a hang the server did not catch)
MEMORY_BYTES = 16 * 2**30  # address space of the bench: a reader that reads /dev/zero whole fails here
OUTPUT_ARGS = ("out", "out_dir", "output_dir", "html", "manifest", "svg", "save_trace", "export", "db")
FOLDER_ARGS = ("out_dir", "output_dir", "att_dir", "root", "workdir", "task_dir", "config_dir")
OUTPUT_ARGS += ("record_db", *FOLDER_ARGS)
INPUT_ARGS = frozenset(
    {
        "path",
        "paths",
        "file",
        "spec",
        "kernel",
        "code_object",
        "contract",
        "task",
        "task_dir",
        "history",
        "bottleneck",
        "isa",
        "profile",
        "profile_json",
        "profile_path",
        "peaks_json",
        "isa_facts_json",
        "ncu_csv",
        "drill_csv",
        "kernel_trace",
        "att_input",
        "eval_result",
        "root",
        "root_a",
        "root_b",
        "wiki",
        "workspace",
        "workdir",
        "a",
        "b",
        "ptxas_log",
        "observe_trace",
        "time_spec",
        "patch",
        "config_dir",
        "import_source",
        "db",
        "record_db",
        "inputs",
        "outputs",
        "roofline_args",
        "set",
        "raw_result",
        "shapes",
    }
)


HOSTILE_JSON = {  # JSON text a JSON argument may carry inline or in a file (issue 41)
    "deep": "[" * 100_000 + "]" * 100_000,
    "deep_object": '{"a": ' * 5_000 + "1" + "}" * 5_000,
    "long_int": '{"n": ' + "9" * 5_000 + "}",
    "long_float": '{"x": 1.' + "5" * 5_000 + "}",
    "huge_exponent": '{"x": 1e999}',
    "nan": '{"x": NaN}',
    "surrogate": '{"s": "\\ud800"}',
    "nul": '{"s": "a\\u0000b"}',
    "bom": '\ufeff{"a": 1}',
    "truncated": '{"a": [1, 2',
    "not_utf8": '{"s": "\udcff"}',  # written with surrogatepass: the byte is not UTF-8
    "list": "[1, 2, 3]",
}
JSON_ARGS = frozenset(
    {
        "bottleneck",
        "isa",
        "history",
        "patch",
        "set",
        "shapes",
        "raw_result",
        "inputs",
        "outputs",
        "environment",
    }
)


def hostile_paths(box: Path) -> list[str]:
    """Every hostile path a case may name (made by `make_sandbox`, plus /proc entries and odd names)."""
    names = ["fifo", "dev_null", "sock", "folder", "loop", "dangling", "to_mem", "to_zero", "folder/"]
    out = [str(box / n) for n in names]
    out += ["/proc/self/mem", "/proc/self/status", str(box / ("n" * 300)), str(box / ("a/" * 2500) / "x")]
    out += [str(box / "no_such_folder" / "x.json"), str(box / "loop" / "x"), str(box / "data.json" / "x")]
    return out


def make_sandbox(box: Path) -> None:
    """The hostile entries (see the module docstring) and two plain files a tool may read."""
    box.mkdir(parents=True, exist_ok=True)
    os.mkfifo(box / "fifo")
    os.mkfifo(box / "dev_null")  # device-like name, FIFO underneath: no real device node is made
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(box / "sock"))
    s.close()
    (box / "folder").mkdir()
    (box / "loop").symlink_to(box / "loop")
    (box / "dangling").symlink_to(box / "gone" / "target")
    (box / "to_mem").symlink_to("/proc/self/mem")
    (box / "to_zero").symlink_to("/dev/zero")
    (box / "data.json").write_text('{"a": 1}\n')
    (box / "notes.txt").write_text("plain text\n")
    for name, text in HOSTILE_JSON.items():
        (box / f"{name}.json").write_text(text, encoding="utf-8", errors="surrogatepass")


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Each entry under `root`, not following links: kind, size, link target or content hash."""
    out: dict[str, tuple[Any, ...]] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p)] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[str(p)] = ("file", st.st_size, hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[str(p)] = (stat.S_IFMT(st.st_mode),)
    return out


def changes(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


# ---- values ----


def _plain(schema: dict[str, Any]) -> Any:
    """A plain valid-looking value of a property schema (what a careful caller would send)."""
    for option in [schema, *schema.get("anyOf", [])]:
        kind = option.get("type")
        if "enum" in option:
            return option["enum"][0]
        if kind == "string":
            return "x"
        if kind == "integer":
            return max(1, int(option.get("minimum", 1)))
        if kind == "number":
            return 1.0
        if kind == "boolean":
            return False
        if kind == "array":
            return []
        if kind == "object":
            return {}
    return "x"


def _types(schema: dict[str, Any]) -> set[str]:
    return {o.get("type", "") for o in [schema, *schema.get("anyOf", [])]} - {""}


def wrong_type(rng: random.Random, schema: dict[str, Any]) -> Any:
    have = _types(schema)
    choices: list[Any] = [
        12345,
        -1,
        "not-a-number",
        ["a", 1],
        {"k": [1, 2]},
        None,
        True,
        1e308,
        10**400,
        [[[]]],
    ]
    deep: Any = []
    for _ in range(rng.choice((100, 200))):  # the client refuses to serialize much deeper (about 250)
        deep = [deep]
    choices.append(deep)
    picked = rng.choice(choices)
    kind = {int: "integer", float: "number", str: "string", list: "array", dict: "object", bool: "boolean"}
    if type(picked).__name__ != "NoneType" and kind.get(type(picked)) in have and rng.random() < 0.7:
        picked = rng.choice([c for c in choices if kind.get(type(c)) not in have] or choices)
    return picked


def huge_string(rng: random.Random) -> str:
    n = rng.choice((10_000, 100_000, 1_000_000))
    pieces = ["A", "{", "[", "\ufeff{", "\x00", "\ud800", "\u2028", "/", "..", "é", "9", '"', "\\"]
    if rng.random() < 0.3:
        return rng.choice(pieces) * n
    return "".join(rng.choice(pieces) for _ in range(200)) * (n // 200)


@dataclass
class Case:
    surface: str
    case: int
    tool: str
    arguments: dict[str, Any]
    outputs: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)  # outputs that name a folder to write into


def plan(tools: list[Any], box: Path, seed: int, surface: str, case: int) -> Case:
    """The tool and arguments of one case (replays from seed, surface and case number)."""
    rng = random.Random(f"{seed}/{surface}/{case}")
    tool = rng.choice(tools)
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    required = tool.input_schema.get("required", [])
    args = {name: _plain(props[name]) for name in required if name in props}
    texts = [n for n, s in props.items() if "string" in _types(s)]
    if surface == "wrong_types" and props:
        for name in rng.sample(sorted(props), min(len(props), rng.randint(1, 3))):
            args[name] = wrong_type(rng, props[name])
    elif surface == "huge_strings" and texts:
        for name in rng.sample(texts, min(len(texts), rng.randint(1, 3))):
            args[name] = huge_string(rng)
    elif surface == "input_paths":
        names = [n for n in props if n in INPUT_ARGS] or texts
        for name in rng.sample(names, min(len(names), rng.randint(1, 2))) if names else []:
            value = rng.choice(hostile_paths(box))
            args[name] = (
                [value] if "array" in _types(props[name]) and "string" not in _types(props[name]) else value
            )
    elif surface == "json_arguments":
        names = [n for n in props if n.endswith("_json") or n in JSON_ARGS] or texts
        for name in rng.sample(names, min(len(names), rng.randint(1, 2))) if names else []:
            key = rng.choice(sorted(HOSTILE_JSON))
            args[name] = HOSTILE_JSON[key] if rng.random() < 0.5 else str(box / f"{key}.json")
    elif surface == "output_paths":
        names = [n for n in props if n in OUTPUT_ARGS] or texts
        for name in rng.sample(names, min(len(names), rng.randint(1, 2))) if names else []:
            extra = [str(box / "new_output.txt"), str(box / "data.json")]
            args[name] = rng.choice([*hostile_paths(box), *extra])
    # whatever the surface, an output argument names what the call is asked to write
    outs = [v for k, v in args.items() if k in OUTPUT_ARGS and isinstance(v, str)]
    folders = [v for k, v in args.items() if k in FOLDER_ARGS and isinstance(v, str)]
    return Case(surface, case, tool.name, args, outs, folders)


# ---- outcomes ----


def kernelpilot_error_names() -> set[str]:
    from kernelpilot.foundation.errors import KernelpilotError

    names, todo = set(), [KernelpilotError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return names


def classify(tool: str, is_error: bool, text: str, typed_names: set[str]) -> str:
    """ok, typed, traceback, untyped, hang or memory, from the call's answer (see the module docstring)."""
    if not is_error:
        return "ok"
    body = text.removeprefix(f"Error executing tool {tool}: ")
    head = body.split(":", 1)[0].split(" (", 1)[0].strip()
    if "MemoryError" in head:
        return "memory"
    if head == "ToolTimeoutError":
        return "hang"
    if "\nfix: " not in body:
        return "untyped"
    if head in typed_names or body.startswith(
        ("invalid arguments", f"{tool}: invalid arguments", "Unknown tool")
    ):
        return "typed"
    if "kernelpilot has no typed error for this" in body:
        return "traceback"
    return "untyped"


def allowed_change(path: str, case: Case, before: dict[str, tuple[Any, ...]], ok: bool) -> bool:
    """A change the call was asked for: a successful call wrote a regular file at a path it was given as
    an output (a new name, or a regular file that was there), inside a folder it was told to make, or made
    the missing folders on the way to it."""
    if not ok:
        return False
    for out in case.outputs:
        target = os.path.abspath(out)
        was = before.get(target)
        if path == target and (was is None or was[0] == "file"):
            return True
        inside = path.startswith(target.rstrip("/") + "/")
        if inside and (was is None or (out in case.folders and was[0] not in ("file", "link"))):
            return True  # inside a folder the call was told to make, or to write into
        if target.startswith(path.rstrip("/") + "/") and before.get(path) is None:
            return True  # a missing folder on the way to it (skills_install makes and records them)
    return False


# ---- the run ----

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist = 3, 100, 100, 4


class Bench:
    """One server, its client and the folders a case may touch; `run_case` is one call."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.box = work / "sandbox"
        self.home = work / "home"
        self.cwd = work / "cwd"
        self.store = work / "store"
        for d in (self.home, self.cwd, self.store):
            d.mkdir(parents=True, exist_ok=True)
        make_sandbox(self.box)
        os.environ.update(
            HOME=str(self.home),
            CLAUDE_CONFIG_DIR=str(self.home / ".claude"),  # skills_install without config_dir writes here
            XDG_DATA_HOME=str(self.home / "data"),
            XDG_CACHE_HOME=str(self.home / "cache"),
            KERNELPILOT_DB=str(self.store / "exp.db"),
            KERNELPILOT_WORKSPACES=str(self.cwd / "workspaces"),
            KERNELPILOT_MCP_TOOL_TIMEOUT_S=str(CALL_LIMIT_S),
            KERNELPILOT_MCP_LONG_TOOL_TIMEOUT_S=str(CALL_LIMIT_S),
        )
        os.chdir(self.cwd)
        self.base = snapshot(self.box)
        self.typed = kernelpilot_error_names()

    def reset(self) -> None:
        """Back to the sandbox as made, the working folder empty (so cases do not see each other)."""
        for p in self.cwd.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink()
        if snapshot(self.box) != self.base:
            shutil.rmtree(self.box)
            make_sandbox(self.box)
            self.base = snapshot(self.box)

    async def run_case(self, client: Any, case: Case) -> tuple[str, str]:
        import anyio

        store_before = snapshot(self.store)
        before = snapshot(self.box)
        try:
            with anyio.fail_after(BENCH_LIMIT_S):
                res = await client.call_tool(case.tool, case.arguments)
            text = "\n".join(getattr(c, "text", "") for c in res.content)
            outcome = classify(case.tool, res.is_error, text, self.typed | kernelpilot_error_names())
            try:  # the in-memory client passes objects; stdio and HTTP must encode the answer as UTF-8
                res.model_dump_json()
            except ValueError as exc:
                outcome, text = "untyped", f"answer cannot be sent as JSON ({exc}): {text[:300]!r}"
        except TimeoutError:
            outcome, text, res = "hang", f"no answer within {BENCH_LIMIT_S:g} s", None
        except Exception as exc:  # the client itself failed: report it as what the agent would see
            outcome, text, res = "untyped", f"client: {type(exc).__name__}: {exc}", None
        ok = res is not None and not res.is_error
        after = snapshot(self.box)
        moved = [p for p in changes(before, after) if not allowed_change(p, case, before, ok)]
        if not ok and changes(store_before, snapshot(self.store)):
            moved.append(str(self.store / "exp.db"))
        if moved and outcome in ("ok", "typed"):
            outcome, text = "changed", f"changed {moved[:3]}; answer: {text}"
        self.reset()
        return outcome, text


async def run(
    seed: int,
    cases: int,
    surfaces: tuple[str, ...] = SURFACES,
    only_tools: list[str] | None = None,
    work: Path | None = None,
    report: Callable[[str], None] = print,
) -> tuple[dict[str, dict[str, int]], dict[str, list[str]], float]:
    """Run `cases` cases per surface; (counts per surface and outcome, examples of bad ones, slowest s)."""
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    own = work is None
    work = work or Path(tempfile.mkdtemp(prefix="kp-fuzz-mcp-"))
    cwd = os.getcwd()
    env = dict(os.environ)
    bench = Bench(work)
    counts = {s: dict.fromkeys(OUTCOMES, 0) for s in surfaces}
    examples: dict[str, list[str]] = {s: [] for s in surfaces}
    slowest = 0.0
    try:
        async with Client(build_server("all")) as client:
            tools = [t for t in (await client.list_tools()).tools if not only_tools or t.name in only_tools]
            t0 = time.monotonic()
            for i in range(cases):
                for surface in surfaces:
                    case = plan(tools, bench.box, seed, surface, i)
                    start = time.monotonic()
                    outcome, text = await bench.run_case(client, case)
                    slowest = max(slowest, time.monotonic() - start)
                    counts[surface][outcome] += 1
                    if outcome in BAD and len(examples[surface]) < 8:
                        shown = {k: _SHORT.repr(v) for k, v in case.arguments.items()}
                        examples[surface].append(f"{outcome}: case {i} {case.tool} {shown}: {text[:600]}")
                if (i + 1) % 100 == 0:
                    report(f"  {i + 1} of {cases} cases per surface, {time.monotonic() - t0:.0f} s")
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return counts, examples, slowest


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000, help="cases per surface (default 1000)")
    ap.add_argument("--seed", type=int, default=4141)
    ap.add_argument("--only", nargs="*", choices=SURFACES, help="surfaces (default: all four)")
    ap.add_argument("--tools", nargs="*", help="tool names (default: every tool of every toolset)")
    args = ap.parse_args()
    import logging

    import anyio

    logging.getLogger("kernelpilot.mcp").setLevel(logging.CRITICAL)  # the answers are what is counted
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    surfaces = tuple(args.only or SURFACES)
    print(
        f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; seed {args.seed}; {CALL_LIMIT_S:.0f} s MCP limit per call, "
        f"{MEMORY_BYTES // 2**30} GiB address space",
        flush=True,
    )
    t0 = time.monotonic()
    counts, examples, slowest = anyio.run(
        run, args.seed, args.cases, surfaces, args.tools, None, lambda s: print(s, flush=True)
    )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'surface':<14}" + "".join(f"{o:>10}" for o in OUTCOMES))
    for s in surfaces:
        print(f"{s:<14}" + "".join(f"{counts[s][o]:>10}" for o in OUTCOMES))
    for s in surfaces:
        for ex in examples[s]:
            print(f"  {s}: " + ex.replace("\n", "\n      ")[:1200])
    bad = {o: sum(counts[s][o] for s in surfaces) for o in BAD}
    total = sum(sum(c.values()) for c in counts.values())
    print(
        f"figure={sum(bad.values())} tracebacks+hangs+untyped errors+memory+changed files "
        f"({bad['traceback']} tracebacks, {bad['hang']} hangs, {bad['untyped']} untyped, "
        f"{bad['memory']} memory, {bad['changed']} changed; {total} cases, {len(surfaces)} surfaces x "
        f"{args.cases}, seed {args.seed}; "
        f"{time.monotonic() - t0:.0f} s, slowest call {slowest:.1f} s, peak RSS {peak_mib:.0f} MiB)"
    )


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
