"""The `kernelpilot` command line: a thin adapter generated from the capability registry.

Each capability's request model becomes a sub-command: fields become `--field-name` options
(lists repeat, booleans get `--x/--no-x`, nested models take inline JSON or a JSON file path:
`validation.load_json_argument`), `positional` fields become positional arguments. The result prints as
text, or as the model's JSON with `--json`.
Errors print to stderr with their fix and exit non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types
import typing
from collections.abc import Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from kernelpilot import __version__
from kernelpilot.capabilities import Capability, all_capabilities, capabilities_for_command
from kernelpilot.foundation.errors import InvalidArgumentError, KernelpilotError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.foundation.validation import flag, load_json_argument, validation_message

__all__ = [
    "build_parser",
    "command_values",
    "main",
    "run_capability",
    "validate_request",
    "validation_message",
]


def _unwrap_optional(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    if origin is typing.Annotated:
        return _unwrap_optional(typing.get_args(tp)[0])
    return tp


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) in (list, tuple, set, frozenset)


def _choices(tp: Any) -> list[str] | None:
    if typing.get_origin(tp) is typing.Literal:
        return [str(a) for a in typing.get_args(tp)]
    if isinstance(tp, type) and issubclass(tp, Enum):
        return [str(m.value) for m in tp]
    return None


def _is_json_typed(tp: Any) -> bool:
    """Nested models and dicts are given as JSON on the command line."""
    if typing.get_origin(tp) is dict or tp is dict:
        return True
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _help(field: FieldInfo) -> str:
    text = field.description or ""
    default = field.default
    if (
        not field.is_required()
        and default is not None
        and default is not PydanticUndefined
        and not callable(default)
        and default not in ("", [], ())
    ):
        text += f" [default: {default}]"
    return text.replace("%", "%%")  # argparse %-formats help strings


def _add_field(parser: argparse.ArgumentParser, cap: Capability, name: str, field: FieldInfo) -> None:
    tp = _unwrap_optional(field.annotation)
    listy = _is_list(tp)
    inner = _unwrap_optional(typing.get_args(tp)[0]) if listy and typing.get_args(tp) else tp
    choices = _choices(inner)
    help_text = _help(field)
    if _is_json_typed(inner):
        help_text += " (inline JSON or a JSON file path)"
    if name in cap.positional:
        nargs: str | None = None
        if listy:
            nargs = "+" if field.is_required() else "*"
        elif not field.is_required():
            nargs = "?"
        parser.add_argument(name, nargs=nargs, choices=choices, help=help_text, default=argparse.SUPPRESS)
        return
    flags = [flag(name)]
    if name in cap.short:
        flags.insert(0, cap.short[name])
    if inner is bool and not listy:
        parser.add_argument(
            *flags,
            dest=name,
            action=argparse.BooleanOptionalAction,
            default=argparse.SUPPRESS,
            help=help_text,
        )
        return
    bare = {"nargs": "?", "const": cap.bare[name]} if name in cap.bare and not listy else {}
    parser.add_argument(
        *flags,
        **bare,
        dest=name,
        action="append" if listy else "store",
        choices=choices,
        required=field.is_required(),
        default=argparse.SUPPRESS,
        help=help_text + (" (repeatable)" if listy else ""),
        metavar=name.upper() if choices is None else None,
    )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command tree; given the arguments about to be parsed, only what they need when they name a
    complete command of one capability module (one import instead of all: faster start for every command)."""
    words = [a for a in argv or () if not a.startswith("-")]
    caps = capabilities_for_command(words) or all_capabilities()
    parser = argparse.ArgumentParser(
        prog="kernelpilot",
        description="GPU-kernel optimization: every number measured or cited.",
    )
    parser.add_argument("--version", action="version", version=f"kernelpilot {__version__}")
    parser.add_argument("--json", action="store_true", help="print the result model as JSON")
    sub = parser.add_subparsers(dest="_command", metavar="COMMAND")
    groups: dict[tuple[str, ...], argparse._SubParsersAction[argparse.ArgumentParser]] = {(): sub}
    for cap in caps:
        for depth in range(1, len(cap.command)):
            prefix = cap.command[:depth]
            if prefix not in groups:
                gp = groups[prefix[:-1]].add_parser(prefix[-1], help=f"{prefix[-1]} commands")
                groups[prefix] = gp.add_subparsers(dest=f"_group_{depth}", metavar="COMMAND")
        leaf = groups[cap.command[:-1]].add_parser(
            cap.command[-1], help=cap.summary.replace("%", "%%"), description=cap.description
        )
        leaf.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        leaf.set_defaults(_capability=cap)
        for name, field in cap.request.model_fields.items():
            _add_field(leaf, cap, name, field)
    return parser


def _coerce(cap: Capability, values: dict[str, Any]) -> dict[str, Any]:
    """Decode JSON-typed arguments; everything else pydantic coerces from strings."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        field = cap.request.model_fields[name]
        tp = _unwrap_optional(field.annotation)
        inner = _unwrap_optional(typing.get_args(tp)[0]) if _is_list(tp) and typing.get_args(tp) else tp
        if _is_json_typed(inner):
            values_in = value if isinstance(value, list) else [value]
            loaded = [load_json_argument(v, flag(name)) for v in values_in]
            value = loaded if isinstance(value, list) else loaded[0]
        out[name] = value
    return out


def validate_request(cap: Capability, values: dict[str, Any]) -> Any:
    """The capability's request model from parsed command-line values (JSON arguments read), without running
    it: what `tests/skills/test_skill_commands.py` checks for documented commands that need a GPU."""
    try:
        return cap.request.model_validate(_coerce(cap, values))
    except ValidationError as exc:
        raise InvalidArgumentError(
            validation_message(exc), f"see `kernelpilot {' '.join(cap.command)} --help`"
        ) from exc


def command_values(args: argparse.Namespace) -> dict[str, Any]:
    """The request fields argparse parsed (its own `_capability`/`_command`/`json` keys dropped)."""
    return {k: v for k, v in vars(args).items() if not k.startswith("_") and k != "json"}


def run_capability(cap: Capability, values: dict[str, Any], progress: Progress = no_progress) -> Any:
    return cap.invoke(validate_request(cap, values), progress)


def stderr_progress() -> Progress:
    """A one-line progress bar on stderr when it is a terminal (or KERNELPILOT_PROGRESS=1), else nothing."""
    if not (sys.stderr.isatty() or os.environ.get("KERNELPILOT_PROGRESS") == "1"):
        return no_progress

    def bar(done: float, total: float | None = None, message: str = "") -> None:
        if total:
            filled = int(30 * min(done / total, 1.0))
            line = f"[{'#' * filled}{'.' * (30 - filled)}] {done:.0f}/{total:.0f} {message}"
        else:
            line = f"{done:.0f} {message}"
        end = "\n" if total and done >= total else ""
        sys.stderr.write("\r" + line[:100].ljust(100) + end)
        sys.stderr.flush()

    return bar


def _print_error(exc: KernelpilotError, as_json: bool) -> None:
    """An error on stderr: its JSON with --json, else the message, the fix and any tool output tail."""
    if as_json:
        print(json.dumps(exc.to_dict(), indent=2), file=sys.stderr)
        return
    print(f"kernelpilot: error: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"  fix: {exc.hint}", file=sys.stderr)
    tail = getattr(exc, "stderr_tail", "")
    if tail:
        print("  --- tool output tail ---\n" + tail, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    cap: Capability | None = getattr(args, "_capability", None)
    if cap is None:
        parser.print_help(sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    values = command_values(args)
    try:
        result = run_capability(cap, values, stderr_progress() if cap.takes_progress else no_progress)
    except KernelpilotError as exc:
        _print_error(exc, as_json)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kernelpilot: interrupted", file=sys.stderr)
        return 130
    failure: KernelpilotError | None = result.cli_error()
    if failure is not None and not as_json:  # --json keeps the result (status, candidates) on stdout
        _print_error(failure, as_json)
        return failure.exit_code
    try:
        print(result.model_dump_json(indent=2) if as_json else result.render_text(), flush=True)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours. Silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code: int = result.cli_exit_code()
    return code


if __name__ == "__main__":
    sys.exit(main())
