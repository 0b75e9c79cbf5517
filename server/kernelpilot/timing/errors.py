"""Typed errors of the timing package (one place, so every timer raises the same kinds)."""

from __future__ import annotations

from kernelpilot.errors import DeviceUnavailableError, KernelpilotError


class CallableError(KernelpilotError):
    """The factory or its closure raised; the message holds the Python exception."""

    kind = "callable_failed"


class GpuLostError(DeviceUnavailableError):
    """The GPU stopped answering (or raised a device error) in the middle of a measurement."""

    kind = "gpu_lost"


class NoGpuWorkError(KernelpilotError):
    """The closure ran but enqueued no kernel, copy or fill on the GPU."""

    kind = "no_gpu_work"
