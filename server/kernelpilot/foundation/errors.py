"""The typed error hierarchy: every failure a user can cause or meet carries a message and a fix hint.

Adapters turn these into their own form (MCP tool error, CLI exit code + stderr); the core never
prints. Nothing here knows about MCP or argparse.
"""

from __future__ import annotations


class KernelpilotError(Exception):
    """Base of every error kernelpilot raises on purpose.

    `message` says what was wrong (naming the argument, file or tool); `hint` says how to fix it.
    """

    kind: str = "error"
    exit_code: int = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} (fix: {self.hint})"
        return self.message

    def to_dict(self) -> dict[str, str]:
        return {"error": self.kind, "type": type(self).__name__, "message": self.message, "hint": self.hint}


class InvalidArgumentError(KernelpilotError):
    """A request argument has the wrong type, range or shape."""

    kind = "invalid_argument"
    exit_code = 2


class InputFileError(KernelpilotError):
    """A file named by the user is missing, unreadable or not of the expected format."""

    kind = "input_file"
    exit_code = 2


class OutputPathError(InputFileError):
    """A path given to write a file (`--out`, `--html`, `--svg`, `--manifest`) is not a regular file or a new
    name in an existing folder: a device, FIFO, socket or directory, an over-long name, a missing folder."""

    kind = "output_path"


class NotFoundError(KernelpilotError):
    """A named thing (GPU, metric, kernel, record, workspace) does not exist."""

    kind = "not_found"


class UnknownSpecError(NotFoundError):
    """A hardware spec is not in any wiki: the explicit UNKNOWN, never a default."""

    kind = "unknown_spec"


class CitationError(KernelpilotError):
    """A citation is forged, stale or dangling, or a number was offered without one."""

    kind = "citation"


class ToolchainError(KernelpilotError):
    """An external program could not be run as asked."""

    kind = "toolchain"


class ToolNotFoundError(ToolchainError):
    """The external program is not installed or not on PATH / its env override."""

    kind = "tool_not_found"


class ToolFailedError(ToolchainError):
    """The external program ran and exited non-zero; carries the tail of its stderr."""

    kind = "tool_failed"

    def __init__(self, message: str, hint: str = "", *, returncode: int = 1, stderr_tail: str = "") -> None:
        super().__init__(message, hint)
        self.returncode = returncode
        self.stderr_tail = stderr_tail

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}\n--- stderr tail ---\n{self.stderr_tail}" if self.stderr_tail else base


class ToolTimeoutError(ToolchainError):
    """The external program outlived its timeout; its whole process group was killed."""

    kind = "tool_timeout"


class PermissionDeniedError(ToolchainError):
    """The tool ran but was refused (e.g. no permission to read GPU performance counters)."""

    kind = "permission_denied"


class DeviceUnavailableError(KernelpilotError):
    """The operation needs a GPU (or a GPU framework) that this machine does not have."""

    kind = "device_unavailable"


class FormatError(KernelpilotError):
    """Data that should follow a known format (ELF, CSV, JSON, wiki line) does not."""

    kind = "format"


class StoreError(KernelpilotError):
    """The experiment store or another persistent file is corrupt, locked or of an unknown version."""

    kind = "store"


class StateError(KernelpilotError):
    """The operation is not allowed in the current state (dirty tree, existing target, missing baseline)."""

    kind = "state"
