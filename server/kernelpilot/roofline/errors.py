"""Typed errors of the roofline package."""

from __future__ import annotations

from kernelpilot.foundation.errors import InvalidArgumentError


class UnknownDtypeError(InvalidArgumentError):
    """A dtype name that kernelpilot does not know."""

    kind = "unknown_dtype"
