"""User-facing text: shortening lines without cutting a word, and validation errors in plain words.

A compact view (`bottleneck`, `suggest`) caps each line; a cap that lands inside a word left fragments
such as "each of the 256 th" (issue 42). `clip` cuts at the last word boundary and marks the cut with an
ellipsis, so a reader knows the rest is in `--json`. `plain_errors` says what a pydantic validation error
means without pydantic's "Field required" or the input's Python repr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ELLIPSIS = "…"


def clip(text: str, width: int) -> str:
    """`text` if it fits in `width` characters, else its longest prefix ending at a word boundary plus "…"
    (a single word longer than half the width is cut inside it rather than dropped)."""
    if len(text) <= width:
        return text
    room = max(width - len(ELLIPSIS), 1)
    cut = text.rfind(" ", 0, room + 1)  # a space at `room` itself means text[:room] ends a word
    if cut < room // 2:
        return text[:room].rstrip() + ELLIPSIS
    return text[:cut].rstrip(" ,;:—-(") + ELLIPSIS


# pydantic's wording -> plain words (issue 42: "Field required" and "input_value={'kernels': ...}" reached
# users); the `type` keys are pydantic-core's error types (https://docs.pydantic.dev/latest/errors/validation_errors/)
_JSON_TYPE = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number",
              float: "a number", type(None): "null"}  # fmt: skip
_PLAIN = {
    "missing": "is missing",
    "extra_forbidden": "is not a known field",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "list_type": "must be a JSON list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
}


def plain_error(err: Mapping[str, Any]) -> str:
    """One pydantic error (`ValidationError.errors()` item) in plain words, without the input's Python repr:
    what the value must be, and what JSON type it was when that helps."""
    kind = str(err.get("type", ""))
    if kind in _PLAIN:
        said = _PLAIN[kind]
        got = _JSON_TYPE.get(type(err.get("input")))
        return f"{said}, got {got}" if got and kind not in ("missing", "extra_forbidden") else said
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    return msg.replace("Input should be", "must be").replace("Field required", "is missing")


def error_place(loc: Sequence[str | int]) -> str:
    """`('kernels', 0, 'kernel')` -> `kernels[0].kernel` (how a JSON path is written)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def plain_errors(errors: Sequence[Mapping[str, Any]], limit: int = 3) -> str:
    """The first `limit` problems, each `place: what is wrong`, and how many more there are."""
    parts = [
        f"{error_place(e.get('loc', ()))}: {plain_error(e)}" if e.get("loc") else plain_error(e)
        for e in errors[:limit]
    ]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more
