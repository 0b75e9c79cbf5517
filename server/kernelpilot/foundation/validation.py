"""The argument layer both adapters share: how bad arguments are named (`--flag` on the command line, the JSON
key over MCP) and how a JSON argument is read (inline JSON or a path to a JSON file, for every `*_json` field
and every JSON-typed option).

Lives apart from `cli` and `mcp_server` so neither adapter imports the other.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError

from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, KernelpilotError
from kernelpilot.foundation.text import plain_error


def flag(name: str) -> str:
    """The CLI option of a request field (`block_size` -> `--block-size`)."""
    return "--" + name.replace("_", "-")


def validation_message(exc: ValidationError, style: str = "cli") -> str:
    """Name each bad argument as the adapter spells it (`--flag` on the CLI, the key over MCP)."""
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        name = flag(loc[0]) if style == "cli" and loc else ".".join(loc)
        if style == "cli" and len(loc) > 1:
            name += "." + ".".join(loc[1:])
        msg = plain_error(err)  # plain words, not pydantic's (issue 42)
        parts.append(f"{name}: {msg}" if name else msg)  # a model-level check names the argument itself
    return "invalid arguments: " + "; ".join(parts)


def looks_inline_json(text: str) -> bool:
    """Inline JSON starts like a JSON document (after a BOM an editor or a shell pipe left); anything else is
    taken for a path."""
    text = text.removeprefix("\ufeff")
    head = text.lstrip()[:1]
    return head in ("{", "[", '"') or text.strip() in ("null", "true", "false") or _is_number(text)


def _is_number(text: str) -> bool:
    if len(text) > readers.MAX_NUMBER_CHARS:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def path_kind(path: Path) -> str:
    """What `path` is, without opening it: "file", "directory", "missing", "special" (a FIFO, device or
    socket), or why it cannot be looked at ("name too long", "symbolic link loop", "not permitted", ...).

    Why: `Path.is_file()` answers False for a folder, a FIFO, `/dev/zero` and a name the file system cannot
    hold alike, so each was reported as "does not exist" (issue 42); opening one blocks (FIFO) or never
    ends (`/dev/zero`).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "dangling symbolic link" if os.path.islink(path) else "missing"
    except OSError as exc:  # ENAMETOOLONG, ELOOP, EACCES, ENOTDIR
        return (exc.strerror or type(exc).__name__).lower()
    except ValueError:  # an embedded NUL
        return "a name holding a NUL"
    if stat.S_ISREG(st.st_mode):
        return "file"
    return "directory" if stat.S_ISDIR(st.st_mode) else "special"


def input_kind_error(value: str, what: str, kind: str) -> InputFileError:
    """The typed error for an input path that is not a readable regular file, saying what it is instead."""
    shown = value if len(value) <= 200 else value[:200] + f"... ({len(value)} characters)"
    if kind == "directory":
        return InputFileError(f"{what} {shown!r} is a directory", "give the path of a file inside it")
    if kind == "special":
        return InputFileError(
            f"{what} {shown!r} is not a regular file (a FIFO, device or socket)", "give the path of a file"
        )
    if kind == "missing":
        return InputFileError(f"{what} {shown!r} does not exist", "check the path")
    return InputFileError(f"{what} {shown!r} cannot be read ({kind})", "give the path of a regular file")


def require_file(path: str | Path, what: str, hint: str) -> Path:
    """`path` as a Path when it names a regular file (links followed); else the typed error saying what it
    is instead, with the caller's `hint`: a folder, FIFO, device or link loop given as an input was reported
    as "does not exist" (issue 42), and `Path.is_file()` raised on a name too long (issue 41)."""
    p = Path(path)
    kind = path_kind(p)
    if kind != "file":
        raise InputFileError(input_kind_error(str(path), what, kind).message, hint)
    return p


def _file_text(value: str, what: str) -> str | None:
    """The text of the JSON file `value` names, through the guarded reader; None when it names no file."""
    path = Path(value.strip()).expanduser()
    kind = path_kind(path)
    if kind != "file" or path.suffix == ".jsonl":
        return None
    return readers.read_text(path, f"{what} JSON file")


def json_argument_text(value: Any) -> Any:
    """The JSON text of a JSON argument given inline or as a file path.

    Already-parsed values (MCP clients may send objects for string fields) are dumped back to text. A string
    that does not look like inline JSON and names a regular file is replaced by the file's text (read by the
    guarded reader: size, UTF-8), so the core reads one form. Folders and `.jsonl` files stay paths for the
    capabilities that accept them (`suggest --history`); anything else is left for `load_json_argument` to
    name (a directory, a FIFO, a missing file). A pydantic validator, so a refusal is a ValueError.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        return json.dumps(value)
    if looks_inline_json(value):
        return value.removeprefix("\ufeff")
    try:
        text = _file_text(value, "argument")
    except KernelpilotError as exc:
        raise ValueError(str(exc)) from exc
    return value if text is None else text


JsonText = Annotated[str, BeforeValidator(json_argument_text)]
"""A JSON argument: inline JSON or the path of a JSON file (read by `json_argument_text`)."""


def load_json_argument(value: Any, what: str) -> Any:
    """Parse a JSON argument (inline or a file path) into Python data, with a typed error naming `what`.

    Inline text and file contents go through `readers.loads_json` (nesting depth, number length, finite
    numbers, no lone surrogates): the standard parser's RecursionError and int-length ValueError were
    tracebacks here (issue 41). A path that is not a regular file is named for what it is (issue 42).
    """
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value)
    text = value.removeprefix("\ufeff")
    if not looks_inline_json(text):
        kind = path_kind(Path(text.strip()).expanduser())
        if kind != "file":
            if kind == "missing":
                raise InputFileError(
                    f"{what}: {text[:200]!r} is neither inline JSON nor an existing file",
                    "pass inline JSON (quote it in the shell) or the path of a JSON file",
                )
            raise input_kind_error(text, what, kind)
        text = readers.read_text(Path(text.strip()).expanduser(), f"{what} JSON file")
    hint = "pass inline JSON (quote it in the shell) or the path of a JSON file"
    try:
        return readers.loads_json(text, what, hint=hint)
    except readers.ReaderError as exc:
        cause = exc.__cause__
        if isinstance(cause, json.JSONDecodeError):
            msg = f"{what} is not valid JSON: {cause.msg} at line {cause.lineno} column {cause.colno}"
            raise InvalidArgumentError(msg, hint) from exc
        raise InvalidArgumentError(exc.message, exc.hint) from exc
