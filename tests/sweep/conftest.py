"""Fixtures of the sweep tests: the experiment-store fixtures (a throw-away PostgreSQL server, a fresh
store per backend) taken from tests/experiments/conftest.py, and a copy of the CPU sweep fixture."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

_EXP = Path(__file__).resolve().parent.parent / "experiments" / "conftest.py"
_spec = importlib.util.spec_from_file_location("_kp_sweep_exp_conftest", _EXP)
assert _spec is not None and _spec.loader is not None
_exp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_exp)

pg_base = _exp.pg_base
db_url = _exp.db_url
_isolated_default = _exp._isolated_default

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "sweep"


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/sweep (spec, 12-shape ledger, CPU kernels)."""
    dst = tmp_path / "sweep"
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__", "PROVENANCE.md"))
    return dst
