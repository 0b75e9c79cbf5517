"""The generated reference of every tool and command (`docs/reference.md`), and the slash commands'
`argument-hint` lines, both rendered from the declarations (capability registry, prompts).

`python -m kernelpilot.adapters.reference --write` regenerates them; `--check` exits 1 when a file is stale
(a test runs the check, so CI fails on a stale reference). Hand edits to the generated files are overwritten.
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from kernelpilot.capabilities import TOOLSETS, Capability, all_capabilities, toolset_names
from kernelpilot.foundation.validation import flag

REPO_ROOT = Path(__file__).resolve().parents[3]
REGENERATE = "python -m kernelpilot.adapters.reference --write"

NAMING = """\
One pattern: a tool is named after its CLI command, words joined by `_` (`kernelpilot exp create`
is `exp_create`, `kernelpilot isa list` is `isa_list`, `kernelpilot memory restart` is `memory_restart`);
a one-word command adds the verb (`kernelpilot ledger` is `ledger_show`, `kernelpilot spec` is
`spec_lookup`), or, when it works on the concept of another one-word command of its toolset, comes after
that concept (`kernelpilot compare` times two closures the way `kernelpilot time` times one, so it is
`time_compare`). So the concept comes first and a toolset's tools sort together. Tools named before
this rule keep their names, since skills, playbooks and hosts' permission settings refer to them:
`classify_bottleneck`, `create_task`, `evaluate`, `init_workspace`, `isa_fit_view`, `render_report`,
`wiki_list_gpus`, `write_plan`. A test holds every other tool, present or future, to the pattern."""

HINTS = (
    (
        "readOnlyHint",
        "writes nothing at all (a tool that may write an output file the caller names is not read-only)",
    ),
    (
        "destructiveHint",
        "may replace or remove data the call does not name as its output (records, iteration "
        "memory, the kernel file), or runs a user-supplied program",
    ),
    ("idempotentHint", "repeating the call with the same arguments changes nothing more"),
    (
        "openWorldHint",
        "runs a user-supplied program or a GPU workload, so its effects reach past kernelpilot's own files",
    ),
)

# Names that predate the pattern (see NAMING); any other tool outside the pattern fails the naming test.
LEGACY_NAMES = frozenset(
    {
        "classify_bottleneck",
        "create_task",
        "evaluate",
        "init_workspace",
        "isa_fit_view",
        "render_report",
        "wiki_list_gpus",
        "write_plan",
    }
)


def follows_naming(cap: Capability, caps: Sequence[Capability] | None = None) -> bool:
    """True when the tool is named after its CLI command's words (plus a verb for a one-word command, or
    the concept of another one-word command in its toolset before it; `caps` default: every capability)."""
    words = [w.replace("-", "_") for w in cap.command]
    if cap.tool == "_".join(words):
        return True
    head, _, rest = cap.tool.partition("_")
    if len(words) != 1:
        return False
    if head == words[0] and rest.isidentifier() and "_" not in rest:
        return True
    concepts = {
        c.command[0]
        for c in (all_capabilities() if caps is None else caps)
        if len(c.command) == 1 and c.toolset == cap.toolset and c.command != cap.command
    }
    return rest == words[0] and head in concepts


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (list, tuple, set, frozenset, dict):
        inner = ", ".join(_type_name(a) for a in args if a is not Ellipsis)
        return f"{origin.__name__}[{inner}]"
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and issubclass(tp, Enum):
        return " | ".join(repr(m.value) for m in tp)
    return getattr(tp, "__name__", str(tp))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        return f"`{field.get_default(call_default_factory=True)!r}`"
    if field.default is PydanticUndefined:
        return ""
    value = field.default.value if isinstance(field.default, Enum) else field.default
    return f"`{value!r}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _hints(cap: Capability) -> str:
    on = [
        name
        for name, value in (
            ("read-only", cap.read_only),
            ("destructive", cap.destructive and not cap.read_only),
            ("idempotent", cap.is_idempotent),
            ("open-world", cap.open_world),
        )
        if value
    ]
    return ", ".join(on) or "none"


def _capability(cap: Capability) -> list[str]:
    command = " ".join(cap.command)
    positional = " ".join(p.upper() for p in cap.positional)
    out = [
        f"### `kernelpilot {command}` · `mcp: {cap.tool}`",
        "",
        f"{_cell(cap.summary)}",
        "",
        f"- toolset: `{cap.toolset}`; hints: {_hints(cap)}"
        + ("; reports progress" if cap.takes_progress else ""),
        f"- usage: `kernelpilot {command}{' ' + positional if positional else ''} [options]`",
        f"- result: `{cap.result.__name__}` (structured output over MCP, `--json` on the CLI)",
        "",
        _cell(cap.description),
        "",
    ]
    fields = cap.request.model_fields
    if fields:
        out += ["| argument | CLI | type | default | description |", "| --- | --- | --- | --- | --- |"]
        for name, field in fields.items():
            if name in cap.positional:
                cli = f"positional {name.upper()}"
            else:
                cli = f"`{cap.short[name]}`, `{flag(name)}`" if name in cap.short else f"`{flag(name)}`"
            out.append(
                f"| `{name}` | {cli} | `{_cell(_type_name(field.annotation))}` | {_default(field)} | "
                f"{_cell(field.description or '')} |"
            )
        out.append("")
    return out


def render() -> str:
    """The whole reference as Markdown."""
    from kernelpilot.adapters.prompts import PROMPTS, argument_hint, description

    caps = all_capabilities()
    lines = [
        "# kernelpilot reference: every tool and command",
        "",
        f"Generated from the capability registry by `{REGENERATE}`; do not edit by hand.",
        "Each capability is one CLI command and one MCP tool with the same arguments and result model.",
        "",
        "## Toolsets",
        "",
        "`kernelpilot-mcp` serves the `core` toolset by default. Add more with `--toolsets isa,profile` or",
        "`KERNELPILOT_TOOLSETS=isa,profile` (`all` for every tool), or at run time with the MCP-only tool",
        "`toolsets_enable` (argument `enable`, a list of toolset names). The CLI always has every command.",
        "",
        "| toolset | what | tools |",
        "| --- | --- | --- |",
    ]
    for name in toolset_names():
        tools = ", ".join(f"`{c.tool}`" for c in caps if c.toolset == name)
        lines.append(f"| `{name}` | {_cell(TOOLSETS.get(name, ''))} | {tools} |")
    lines += ["", "## Tool names", "", NAMING, "", "## Tool annotations", ""]
    lines += ["Each tool carries the four MCP behaviour hints, declared beside its capability:", ""]
    lines += ["| hint | meaning here |", "| --- | --- |"]
    lines += [f"| `{hint}` | {meaning} |" for hint, meaning in HINTS]
    lines += ["", "## Prompts", ""]
    lines += [
        "MCP prompts, one per slash command in `skills/.commands/` and per phase skill; the text is read",
        "from that Markdown file when the prompt is fetched. Claude Code shows them as",
        "`/mcp__kernelpilot__<name>`.",
        "",
        "| prompt | arguments | what |",
        "| --- | --- | --- |",
    ]
    for spec in PROMPTS:
        lines.append(f"| `{spec.name}` | `{_cell(argument_hint(spec))}` | {_cell(description(spec))} |")
    lines += ["", "## Commands and tools", ""]
    for cap in sorted(caps, key=lambda c: c.command):
        lines += _capability(cap)
    return "\n".join(lines).rstrip() + "\n"


_HINT_LINE = re.compile(r"^argument-hint:.*$", re.M)


def _command_file(spec_name: str, root: Path) -> tuple[Path, str]:
    from kernelpilot.adapters.prompts import PROMPTS, argument_hint

    spec = next(s for s in PROMPTS if s.name == spec_name)
    path = root / "skills" / ".commands" / f"{spec.command}.md"
    text = path.read_text(encoding="utf-8")
    return path, _HINT_LINE.sub(lambda _m: f"argument-hint: {argument_hint(spec)}", text, count=1)


def generated(root: Path = REPO_ROOT) -> dict[Path, str]:
    """Every generated file under `root` with the content it should have."""
    from kernelpilot.adapters.prompts import PROMPTS

    out = {root / "docs" / "reference.md": render()}
    for spec in PROMPTS:
        if spec.command:
            path, text = _command_file(spec.name, root)
            out[path] = text
    return out


def stale(root: Path = REPO_ROOT) -> list[Path]:
    """The generated files whose content differs from what the declarations give."""
    return [
        p for p, text in generated(root).items() if not p.is_file() or p.read_text(encoding="utf-8") != text
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelpilot.adapters.reference", description=__doc__)
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate the files")
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated file is stale")
    args = parser.parse_args(argv)
    if args.check:
        old = stale(args.root)
        for path in old:
            print(f"stale: {path} (run `{REGENERATE}`)", file=sys.stderr)
        return 1 if old else 0
    from kernelpilot.foundation.atomic import write_text_atomic

    for path, text in generated(args.root).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text_atomic(path, text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
