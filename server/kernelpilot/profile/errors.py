"""Typed errors of the profiling layer (subclasses of the shared hierarchy)."""

from __future__ import annotations

from kernelpilot.foundation.errors import FormatError, NotFoundError, ToolchainError


class NoKernelsProfiledError(NotFoundError):
    """The profiler ran but no kernel launch matched the filters.

    ncu says '==WARNING== No kernels were profiled' and exits 0.
    """

    kind = "no_kernels_profiled"


class ProfileFormatError(FormatError):
    """A profiler output file (CSV, JSON) is empty, truncated or not of the expected page/format."""

    kind = "profile_format"


class ProfilerError(ToolchainError):
    """The profiler reported an error of its own (==ERROR== lines) although it may have exited 0."""

    kind = "profiler_error"


class AttFormatError(ProfileFormatError):
    """An ATT dispatch folder file is missing, truncated, of an unknown version, or not what it should be."""

    kind = "att_format"
