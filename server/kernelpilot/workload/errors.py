"""Typed errors of the workload package."""

from __future__ import annotations

from kernelpilot.foundation.errors import FormatError, InvalidArgumentError, NotFoundError


class TraceFormatError(FormatError):
    """A trace file is truncated, empty, or not one of the formats `workload read` knows."""

    kind = "trace_format"


class NoStepWorkError(NotFoundError):
    """The captured steps (or the region) ran no kernel, copy or fill on the GPU."""

    kind = "no_gpu_work"


class RegionNotEnteredError(NotFoundError):
    """The program ran but never entered the region (NVTX range / cudaProfilerStart) that marks a step."""

    kind = "region_not_entered"


class NotIsolableError(NotFoundError):
    """`workload isolate` cannot write a call for this kernel: no recorded op, shapes or schema for it."""

    kind = "not_isolable"


class KernelChoiceError(InvalidArgumentError):
    """`--kernel` names no row of the workload, or several."""

    kind = "kernel_choice"
