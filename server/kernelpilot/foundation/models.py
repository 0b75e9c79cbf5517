"""Base pydantic models shared by every capability: requests, results, and their text rendering.

One model, two renderings: the MCP adapter returns a result as structured output, the CLI prints
`render_text()` by default and `model_dump_json()` with `--json`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.foundation.readers import find_surrogate


class Request(BaseModel):
    """Base of every request model: unknown arguments are an error, never silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=False, defer_build=True)

    @model_validator(mode="after")
    def _encodable_text(self) -> Request:
        """Refuse a lone UTF-16 surrogate or a NUL in any text argument, naming the argument.

        Why: `"\\ud800"` over MCP, or a non-UTF-8 byte in argv (Python's surrogateescape), passes every
        field's own check and then fails far away, at the first file write or at `--json` printing
        (issue 41); no path, name or stored text may hold a NUL either.
        """
        for name, value in self.__dict__.items():
            where = find_surrogate(value)
            if where:
                inner = where.removeprefix("$")
                raise ValueError(
                    f"{name}{inner} holds a NUL or a lone UTF-16 surrogate (a byte that is not UTF-8?); "
                    "give UTF-8 text"
                )
        return self


class Result(BaseModel):
    """Base of every result model. Subclasses override `render_text` for a readable CLI view."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    def render_text(self) -> str:
        """Readable text; the default is indented JSON, which is honest if not pretty."""
        return json.dumps(self.model_dump(mode="json"), indent=2)

    def cli_exit_code(self) -> int:
        """Exit status the CLI uses after printing this result (e.g. 1 when an audit found problems)."""
        return 0

    def cli_error(self) -> KernelpilotError | None:
        """The error this result stands for on the command line, or None. A result that answers "not found"
        (spec's UNKNOWN) stays a result over MCP, but the CLI prints it like a raised error: message and fix
        on stderr, the error's exit code (one convention with `roofline`, issue 42)."""
        return None


def compact_json(data: Any) -> str:
    """Stable, compact JSON used for hashing and JSONL lines."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
