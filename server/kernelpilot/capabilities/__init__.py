"""The capability registry: one core function, declared once, served as a CLI command and an MCP tool.

Each concept declares its capabilities in a module of this package, `kernelpilot/capabilities/<concept>.py`,
as a module-level `CAPABILITIES` list (importing only request/result models: cheap). The core function is
named by a dotted path (`"kernelpilot.host.doctor:run_doctor"`) so that listing capabilities never imports
heavy modules; it is imported on first call.
"""

from __future__ import annotations

import errno
import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.foundation.models import Request, Result
from kernelpilot.foundation.progress import Progress, no_progress


@dataclass(frozen=True)
class Capability:
    """A core function with its request/result models and how each adapter names it.

    - `tool`: MCP tool name (snake_case, e.g. `spec_lookup`).
    - `command`: CLI path (e.g. `("isa", "fit")` for `kernelpilot isa fit`).
    - `target`: `"module:function"`; the function takes `(request)` or `(request, progress)`
      and returns an instance of `result`.
    - `positional`: request fields given positionally on the command line, in order.
    - `short`: per-field short CLI flags, e.g. `{"kernel": "-k"}`.
    - `bare`: options the command line also takes without a value, and the value a bare one stands for
      (`{"html": ""}`: `--html` alone is `--html ''`, the default file), so a switch that became
      `--html FILE` keeps working in existing scripts.
    - `toolset`: the MCP toolset serving the tool (see `TOOLSETS`); empty means the declaring module's name.
      The CLI always has every capability; MCP serves `core` plus the toolsets a host selects.
    - Tool annotations (MCP hints, see docs/reference.md "Tool annotations"): `read_only` (never writes
      anything), `destructive` (may replace or remove data the call does not name as its output, or runs a
      user program), `idempotent` (a repeat call with the same arguments changes nothing more; None: same as
      `read_only`), `open_world` (runs a user-supplied program or touches a GPU, so its effects reach past
      kernelpilot's own files).
    """

    tool: str
    command: tuple[str, ...]
    summary: str
    description: str
    request: type[Request]
    result: type[Result]
    target: str
    positional: tuple[str, ...] = ()
    short: dict[str, str] = field(default_factory=dict)
    bare: dict[str, str] = field(default_factory=dict)
    read_only: bool = True
    destructive: bool = False
    idempotent: bool | None = None
    open_world: bool = False
    toolset: str = ""
    long_running: bool = False
    takes_progress: bool = False

    @property
    def is_idempotent(self) -> bool:
        return self.read_only if self.idempotent is None else self.idempotent

    def resolve(self) -> Callable[..., Any]:
        module_name, _, func_name = self.target.partition(":")
        module = importlib.import_module(module_name)
        fn: Callable[..., Any] = getattr(module, func_name)
        return fn

    def invoke(self, request: Request, progress: Progress = no_progress) -> Result:
        """Run the core function; the one place both adapters call through.

        A path the operating system refuses for its shape (a name longer than the file system holds, a
        symbolic-link loop) fails wherever a core function first looks at it, often in `Path.exists()`,
        which raises for these in Python 3.11 (issue 41: the MCP fuzz found four tools doing so): it
        becomes here one typed error naming the argument, instead of a check at every call site.
        """
        fn = self.resolve()
        try:
            out = fn(request, progress) if self.takes_progress else fn(request)
        except OSError as exc:
            if exc.errno == errno.E2BIG:  # a huge argument handed on to a child process's argv
                longest = max((len(v) for v in request.__dict__.values() if isinstance(v, str)), default=0)
                raise InvalidArgumentError(
                    f"an argument is too long to hand to a child process ({exc.strerror})",
                    f"give a path or a short value (the longest argument has {longest:,} characters)",
                ) from exc
            # EIO: the system could not read a file (a /proc file such as /proc/self/mem, a failing disk);
            # its read() names no file, so it is typed whatever path it came from
            shape = exc.errno in (errno.ENAMETOOLONG, errno.ELOOP, errno.EIO)
            # a file given where a folder belongs (or the reverse): typed only when the path is (inside)
            # the user's argument
            user_path = argument_of_path(request.__dict__, exc) is not None
            kind = exc.errno in (errno.ENOTDIR, errno.EISDIR) and user_path
            if not (shape or kind):
                raise
            raise _path_shape_error(request, exc) from exc
        if not isinstance(out, self.result):
            raise TypeError(f"{self.target} returned {type(out).__name__}, expected {self.result.__name__}")
        return out


def argument_of_path(values: Mapping[str, Any], exc: BaseException) -> str | None:
    """The argument whose text is (part of, or `~`-expanded) the path an OSError names, or None; both
    adapters name it in their errors (`Capability.invoke` here, `mcp_server.unexpected_error_text`)."""
    names = [str(f) for f in (getattr(exc, "filename", None), getattr(exc, "filename2", None)) if f]
    texts = {k: v for k, v in values.items() if isinstance(v, str) and len(v.strip()) > 1}
    named = (k for k, v in texts.items() if any(v in n or os.path.expanduser(v) == n for n in names))
    return next(named, None)


def _path_shape_error(request: Request, exc: OSError) -> InputFileError:
    """The typed error for a path the OS refused for its shape or kind, naming the field that holds it."""
    name = str(exc.filename or "")
    arg = argument_of_path(request.__dict__, exc)
    shown = name if len(name) <= 120 else f"{name[:120]}... ({len(name)} characters)"
    where = f"--{arg.replace('_', '-')} " if arg else ""
    what = f"{where}path {shown!r}" if name else "reading an input file"
    return InputFileError(
        f"{what}: {exc.strerror}",
        "give a regular file where a file is asked for and a folder where a folder is, by a path whose "
        "every name is at most 255 bytes and that is not a symbolic link loop (nor a /proc file)",
    )


@cache
def all_capabilities() -> tuple[Capability, ...]:
    """Every capability declared under `kernelpilot.capabilities`, sorted by tool name."""
    import kernelpilot.capabilities as pkg

    found: list[Capability] = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        found.extend(_with_toolset(c, info.name) for c in getattr(module, "CAPABILITIES", []))
    tools = [c.tool for c in found]
    dupes = {t for t in tools if tools.count(t) > 1}
    if dupes:
        raise RuntimeError(f"duplicate MCP tool names: {sorted(dupes)}")
    commands = [c.command for c in found]
    cdupes = {c for c in commands if commands.count(c) > 1}
    if cdupes:
        raise RuntimeError(f"duplicate CLI commands: {sorted(cdupes)}")
    return tuple(sorted(found, key=lambda c: c.tool))


def _with_toolset(cap: Capability, module_name: str) -> Capability:
    """A capability that declares no toolset lands in the one named after its module (`isa`, `sweep`, ...)."""
    return cap if cap.toolset else replace(cap, toolset=module_name)


# Toolsets a host can select (`kernelpilot-mcp --toolsets isa,profile`, KERNELPILOT_TOOLSETS, or the
# `toolsets_enable` tool at run time). `core` is always served. A toolset not listed here (a new capability
# module's name) still works; it is described by the summaries of its tools.
TOOLSETS: dict[str, str] = {
    "core": "Step 0: machine check, GPUs and cited specs from the gpu-wiki, roofline, citation audit",
    "measure": "kernel timing (CUDA events or a command's metric) and measured GPU ceilings",
    "workspace": "optimization workspaces: init, iteration memory (v<N>.json), plans and reports",
    "tasks": "bounded tasks: define one, evaluate a candidate against its baseline, read its ledger",
    "profile": "ncu / rocprofv3: run, parse, hotspots, bottleneck classification",
    "isa": "code objects: kernels, resources, disassembly, instruction mix, occupancy, fit view",
    "experiments": "the experiment database and hypotheses: record, query, rank, lineage, suggest",
    "sweep": "parameter sweeps over a task",
    "workload": "workload triage: a model step or trace -> the kernels holding its time, opportunities",
    "skills": "the skill pack into a Claude Code profile, and out again",
}


def toolset_names() -> tuple[str, ...]:
    """Every toolset some capability is in, known ones first in `TOOLSETS` order."""
    used = {c.toolset for c in all_capabilities()}
    return tuple([t for t in TOOLSETS if t in used] + sorted(used - set(TOOLSETS)))


def capabilities_for_command(words: Sequence[str]) -> tuple[Capability, ...] | None:
    """The capabilities of the module named after the command's first word (`isa ...` ->
    `kernelpilot.capabilities.isa`) when one of them is exactly the command `words` starts with; else None
    (then the caller loads them all). Lets the CLI skip importing every other capability's models."""
    if not words or not words[0].isidentifier() or words[0].startswith("_"):
        return None
    import kernelpilot.capabilities as pkg

    if not any(info.name == words[0] for info in pkgutil.iter_modules(pkg.__path__)):
        return None
    module = importlib.import_module(f"{pkg.__name__}.{words[0]}")
    caps = tuple(_with_toolset(c, words[0]) for c in getattr(module, "CAPABILITIES", ()))
    if not any(tuple(words[: len(c.command)]) == c.command for c in caps):
        return None
    return caps


def by_tool(name: str) -> Capability | None:
    for cap in all_capabilities():
        if cap.tool == name:
            return cap
    return None
