"""Typed errors of the guard package."""

from __future__ import annotations

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, KernelpilotError


class ContractError(InvalidArgumentError):
    """A task's reference contract is malformed (a missing function, a bad shape, a bad tolerance)."""

    kind = "contract"


class ContractLoadError(InputFileError):
    """A contract module could not be imported or a named function is missing."""

    kind = "contract_load"


class GuardFindingsError(KernelpilotError):
    """The timing of an observed closure failed after the guard saw a replaced timer or a started thread.

    Why its own kind: eval reads it from the timing process's output and rejects the candidate with the
    finding instead of calling the run merely failed.
    """

    kind = "guard_findings"
    PREFIX = "the guard's findings: "

    @classmethod
    def of(cls, findings: list[str], why: str) -> GuardFindingsError:
        return cls(
            f"{cls.PREFIX}{' | '.join(findings)} ({why})",
            "a candidate may not replace timing functions nor start threads",
        )
