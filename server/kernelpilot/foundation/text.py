"""Shortening text for the CLI's compact views without cutting a word in half.

A compact view (`bottleneck`, `suggest`) caps each line; a cap that lands inside a word left fragments
such as "each of the 256 th" (issue 42). `clip` cuts at the last word boundary and marks the cut with an
ellipsis, so a reader knows the rest is in `--json`.
"""

from __future__ import annotations

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
