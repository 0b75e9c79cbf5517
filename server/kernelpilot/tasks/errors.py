"""Typed errors of tasks and evals."""

from __future__ import annotations

from kernelpilot.foundation.errors import StateError


class CorrectnessFailedError(StateError):
    """A correctness command failed during a baseline refresh; `stderr_tail` holds its output."""

    kind = "correctness_failed"

    def __init__(self, message: str, hint: str = "", *, stderr_tail: str = "") -> None:
        super().__init__(message, hint)
        self.stderr_tail = stderr_tail
