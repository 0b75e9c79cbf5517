"""Base pydantic models shared by every capability: requests, results, and their text rendering.

One model, two renderings: the MCP adapter returns a result as structured output, the CLI prints
`render_text()` by default and `model_dump_json()` with `--json`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from kernelpilot.foundation.errors import KernelpilotError


class Request(BaseModel):
    """Base of every request model: unknown arguments are an error, never silently dropped."""

    model_config = ConfigDict(extra="forbid", frozen=False, defer_build=True)


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
