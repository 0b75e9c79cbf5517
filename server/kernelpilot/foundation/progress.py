"""How a long core function reports progress without knowing its adapter (CLI bar, MCP notification)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Progress sink a long core function may call: `progress(done, total, message)`."""

    def __call__(self, done: float, total: float | None = None, message: str = "") -> None: ...


def no_progress(done: float, total: float | None = None, message: str = "") -> None:
    """The default sink: drop progress reports (the CLI and tests do not need them)."""
