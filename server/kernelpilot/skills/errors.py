"""Errors of `skills install`: the Claude profile it was pointed at cannot hold the links."""

from __future__ import annotations

from kernelpilot.foundation.errors import KernelpilotError


class ClaudeProfileError(KernelpilotError):
    """The Claude config folder, one of its `skills`/`commands` folders or the install record is unusable."""

    kind = "claude_profile"
    exit_code = 2
