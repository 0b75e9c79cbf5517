"""`timing.compare.set_aside`: a side's own modules move aside so the next import is fresh; libraries stay,
even installed in an environment inside the side's root (a repository's `.venv`)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelpilot.timing.compare import set_aside


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    lib = tmp_path / ".venv" / "lib" / "python3" / "site-packages"
    lib.mkdir(parents=True)
    (lib / "kp_fake_lib.py").write_text("VALUE = 'library'\n")
    (tmp_path / "kp_side_helper.py").write_text("import kp_fake_lib\nVALUE = 'side'\n")
    sys.path[:0] = [str(tmp_path), str(lib)]
    yield tmp_path.resolve()
    sys.path.remove(str(tmp_path))
    sys.path.remove(str(lib))
    for name in [n for n in sys.modules if "kp_fake_lib" in n or "kp_side_helper" in n]:
        del sys.modules[name]


def test_the_sides_own_module_moves_aside_and_an_installed_library_stays(root: Path) -> None:
    before = set(sys.modules)
    helper = importlib.import_module("kp_side_helper")
    lib = sys.modules["kp_fake_lib"]
    set_aside(before, root, "guard checks")
    assert "kp_side_helper" not in sys.modules
    assert sys.modules["_kernelpilot_side_guard_checks.kp_side_helper"] is helper
    assert sys.modules["kp_fake_lib"] is lib  # in .venv/.../site-packages under the root: a library
    again = importlib.import_module("kp_side_helper")
    assert again is not helper and again.VALUE == "side"  # imported afresh
