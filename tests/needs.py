"""A test that needs an optional Python package: skipped with its name locally, a failure in CI.

The counterpart of `@pytest.mark.needs_tool` (tests/conftest.py) for packages of the dev extra
(pyproject.toml): CI (`KERNELPILOT_CI=1`) installs them, so a missing one there means CI is broken, and the
test must say so instead of skipping. `pytest.importorskip` would skip in CI too.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def in_ci() -> bool:
    return os.environ.get("KERNELPILOT_CI") == "1"


def needs_module(name: str, install: str = "pip install -e '.[dev]'") -> ModuleType:
    """The module `name`, imported; when it cannot be imported the test (or, called at module level, the
    module's tests) skips naming it outside CI, and fails in CI, saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        why = f"needs the Python package {name!r} ({install}): {exc}"
        if in_ci():
            pytest.fail(f"KERNELPILOT_CI=1 and {why}", pytrace=False)
        pytest.skip(why, allow_module_level=True)
