"""Typed errors of the timing package (one place, so every timer raises the same kinds)."""

from __future__ import annotations

from kernelpilot.foundation.errors import (
    DeviceUnavailableError,
    FormatError,
    InvalidArgumentError,
    KernelpilotError,
    ToolFailedError,
    ToolTimeoutError,
)


class CallableError(KernelpilotError):
    """The factory or its closure raised; the message holds the Python exception."""

    kind = "callable_failed"


class GpuLostError(DeviceUnavailableError):
    """The GPU stopped answering (or raised a device error) in the middle of a measurement."""

    kind = "gpu_lost"


class NoGpuWorkError(KernelpilotError):
    """The closure ran but enqueued no kernel, copy or fill on the GPU."""

    kind = "no_gpu_work"


class CommandFailedError(ToolFailedError):
    """A measured command exited non-zero; `stderr_tail` holds the tail of its output."""

    kind = "command_failed"


class CommandTimeoutError(ToolTimeoutError):
    """A measured command outlived its timeout; its process group was killed."""

    kind = "command_timeout"

    def __init__(self, message: str, hint: str = "", *, stderr_tail: str = "") -> None:
        super().__init__(message, hint)
        self.stderr_tail = stderr_tail


class MetricNotFoundError(FormatError):
    """The command ran but its output does not carry the metric."""

    kind = "metric_not_found"

    def __init__(self, message: str, hint: str = "", *, stderr_tail: str = "") -> None:
        super().__init__(message, hint)
        self.stderr_tail = stderr_tail


class NotComparableError(InvalidArgumentError):
    """The two sides of a comparison return outputs of different shapes or dtypes: not the same work."""

    kind = "not_comparable"


class SideFailedError(CallableError):
    """One side of a paired comparison raised; `side` names it (nothing is recorded)."""

    kind = "side_failed"

    def __init__(self, message: str, hint: str = "", *, side: str = "") -> None:
        super().__init__(message, hint)
        self.side = side


class TimerMismatchError(KernelpilotError):
    """The device event timer disagrees with the host clock on a spin of known length: it is not measuring
    (a replaced `torch.cuda.Event.elapsed_time`, say), so nothing timed with it can be trusted."""

    kind = "timer_mismatch"
