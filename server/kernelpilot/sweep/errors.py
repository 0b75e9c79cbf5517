"""Typed errors of sweeps: each names the spec key, ledger line, variant, cell or scheduler address."""

from __future__ import annotations

from kernelpilot.foundation.errors import InputFileError, KernelpilotError, NotFoundError, ToolchainError


class SweepSpecError(InputFileError):
    """The sweep spec (TOML) is unreadable or a key in it is wrong."""

    kind = "sweep_spec"


class LedgerError(InputFileError):
    """A shape ledger line is not JSON, lacks a field, or a variant needs a field the line lacks."""

    kind = "sweep_ledger"


class UnknownVariantError(NotFoundError):
    """A variant named (as baseline or on the command line) is not in the spec."""

    kind = "sweep_unknown_variant"


class CellFailedError(KernelpilotError):
    """One or more cells crashed (factory or command raised); the others were recorded."""

    kind = "sweep_cell_failed"


class SchedulerUnreachableError(ToolchainError):
    """The Dask scheduler at the given address did not answer."""

    kind = "sweep_scheduler_unreachable"


class ClusterError(ToolchainError):
    """A local Dask cluster could not be started, or lost every worker."""

    kind = "sweep_cluster"
