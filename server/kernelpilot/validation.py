"""How both adapters name bad arguments: `--flag` on the command line, the JSON key over MCP.

Lives apart from `cli` and `mcp_server` so neither adapter imports the other.
"""

from __future__ import annotations

from pydantic import ValidationError


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
