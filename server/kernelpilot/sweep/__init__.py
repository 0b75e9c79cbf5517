"""Sweeps: every variant of a kernel (candidates and baselines) over a ledger of production shapes, on Dask.

Submodules: `models` (spec, ledger line, cell and result models; cheap to import), `spec` (reading the
TOML spec and the JSONL ledger with typed errors), `cell` (what a Dask worker runs for one variant x
shape: correctness check, then timing), `timing_adapter` (the one seam to `kernelpilot.timing`),
`cluster` (local GPU-pinned / CPU / existing Dask clusters), `records` (cells and sweeps as experiment
records, written once by key), `stats` (weighted geometric mean and its bootstrap CI), `run` (the
`sweep_run` capability), `report` (the `sweep_report` capability and the HTML dashboard).
Dask (`distributed`) is imported only when a sweep runs.
"""
