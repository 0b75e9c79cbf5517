"""Typed errors of the workspace concept (subclasses of the shared hierarchy: adapters need nothing new)."""

from __future__ import annotations

from kernelpilot.foundation.errors import FormatError, InvalidArgumentError, NotFoundError, StateError


class WorkspaceNameError(InvalidArgumentError):
    """A workspace name has a path separator, `..`, or characters outside `[A-Za-z0-9._-]`."""

    kind = "workspace_name"


class WorkspaceExistsError(StateError):
    """The target folder of `workspace init` exists and is not empty."""

    kind = "workspace_exists"


class WorkspaceNotFoundError(NotFoundError):
    """No workspace (a folder with `workspace.json` and `memory/`) at the given path or name."""

    kind = "workspace_not_found"


class MemorySchemaError(FormatError):
    """An iteration memory record does not satisfy `memory.schema.json`; `field_path` names the field."""

    kind = "memory_schema"
    exit_code = 2

    def __init__(self, message: str, hint: str = "", *, field_path: str = "", file: str = "") -> None:
        super().__init__(message, hint)
        self.field_path = field_path
        self.file = file


class MemoryVersionError(NotFoundError):
    """The requested memory version does not exist (or is masked and masked ones were not asked for)."""

    kind = "memory_version"


class DirtyTreeError(StateError):
    """The workspace git tree has uncommitted changes, so a restart would lose work."""

    kind = "dirty_tree"
