"""Typed errors of the workload package."""

from __future__ import annotations

from kernelpilot.foundation.errors import FormatError, NotFoundError


class TraceFormatError(FormatError):
    """A trace file is truncated, empty, or not one of the formats `workload read` knows."""

    kind = "trace_format"


class NoStepWorkError(NotFoundError):
    """The captured steps (or the region) ran no kernel, copy or fill on the GPU."""

    kind = "no_gpu_work"


class RegionNotEnteredError(NotFoundError):
    """The program ran but never entered the region (NVTX range / cudaProfilerStart) that marks a step."""

    kind = "region_not_entered"
