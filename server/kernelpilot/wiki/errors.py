"""Typed errors of the gpu-wiki (lookup, merging user wikis, citations)."""

from __future__ import annotations

from kernelpilot.foundation.errors import CitationError, InvalidArgumentError


class AmbiguousNameError(InvalidArgumentError):
    """A GPU or metric name matches more than one entry; `candidates` lists them."""

    kind = "ambiguous_name"

    def __init__(self, message: str, hint: str = "", *, candidates: list[str] | None = None) -> None:
        super().__init__(message, hint)
        self.candidates = list(candidates or [])


class WikiConflictError(CitationError):
    """Two user wikis define the same GPU metric with different values: neither is used silently."""

    kind = "wiki_conflict"

    def __init__(self, message: str, hint: str = "", *, candidates: list[str] | None = None) -> None:
        super().__init__(message, hint)
        self.candidates = list(candidates or [])


class UnitMismatchError(InvalidArgumentError):
    """A value has a unit other than the one required (e.g. a bandwidth given in TFLOP/s)."""

    kind = "unit_mismatch"


class BareNumberError(CitationError):
    """A hardware number was offered without a citation (a bare float): refused."""

    kind = "bare_number"
