"""The argument layer both adapters share: how bad arguments are named (`--flag` on the command line, the JSON
key over MCP) and how a JSON argument is read (inline JSON or a path to a JSON file, for every `*_json` field
and every JSON-typed option).

Lives apart from `cli` and `mcp_server` so neither adapter imports the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError


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
        parts.append(f"{name}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def looks_inline_json(text: str) -> bool:
    """Inline JSON starts like a JSON document; anything else is taken for a path."""
    head = text.lstrip()[:1]
    return head in ("{", "[", '"') or text.strip() in ("null", "true", "false") or _is_number(text)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system (or unreadable folder) is not a file
        return False


def json_argument_text(value: Any) -> Any:
    """The JSON text of a JSON argument given inline or as a file path.

    Already-parsed values (MCP clients may send objects for string fields) are dumped back to text. A string
    that does not look like inline JSON and names a file is replaced by the file's text, so the core reads one
    form. Folders and `.jsonl` files stay paths for the capabilities that accept them (`suggest --history`);
    a string that is neither JSON-looking nor an existing path is left to fail JSON parsing with its name.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        return json.dumps(value)
    if looks_inline_json(value):
        return value
    path = Path(value.strip()).expanduser()
    if _is_file(path) and path.suffix != ".jsonl":
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read JSON file {value!r}: {exc}") from exc
    return value


JsonText = Annotated[str, BeforeValidator(json_argument_text)]
"""A JSON argument: inline JSON or the path of a JSON file (read by `json_argument_text`)."""


def load_json_argument(value: Any, what: str) -> Any:
    """Parse a JSON argument (inline or a file path) into Python data, with a typed error naming `what`."""
    text = json_argument_text(value)
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if not looks_inline_json(text) and not _is_file(Path(text.strip()).expanduser()):
            raise InputFileError(
                f"{what}: {text[:200]!r} is neither inline JSON nor an existing file",
                "pass inline JSON (quote it in the shell) or the path of a JSON file",
            ) from exc
        raise InvalidArgumentError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "pass inline JSON (quote it in the shell) or the path of a JSON file",
        ) from exc
