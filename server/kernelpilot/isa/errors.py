"""Typed errors of the ISA readers; each names the file and what was wrong."""

from __future__ import annotations

from kernelpilot.foundation.errors import (
    FormatError,
    InputFileError,
    InvalidArgumentError,
    NotFoundError,
    ToolchainError,
)


class CodeObjectError(FormatError):
    """A code object (ELF, fatbin, bundle, note) is truncated, corrupt or not what it claims to be."""

    kind = "code_object"

    def __init__(self, path: str, what: str, hint: str = "") -> None:
        super().__init__(
            f"{path}: {what}",
            hint
            or "check that the file is a complete, uncorrupted GPU code object (cubin, fatbin, HSACO, "
            "offload bundle) or a host binary embedding one",
        )
        self.path = path


class UnsupportedCodeObjectError(InputFileError):
    """A well-formed file that holds no GPU code this reader understands (wrong machine, host-only ELF)."""

    kind = "unsupported_code_object"


class UnknownArchError(InvalidArgumentError):
    """An architecture id (sm_XX, gfxNNNN) that the occupancy table does not cover."""

    kind = "unknown_arch"


class KernelNotFoundError(NotFoundError):
    """No kernel in the file matched the --kernel pattern."""

    kind = "kernel_not_found"


class DisassemblerTargetError(ToolchainError):
    """The installed disassembler does not know the code object's processor (an LLVM older than it)."""

    kind = "disassembler_target"
