"""Bounded function length in `server/` (AGENTS.md, "Complexity"): no function over 100 lines.

Ruff's C90 rule (max-complexity in pyproject.toml) bounds branching; this bounds length, which C90 misses
for long straight-line functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
MAX_LINES = 100


def _long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > MAX_LINES:
                    found.append(
                        f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)"
                    )
    return found


def test_no_function_over_100_lines() -> None:
    long = _long_functions(SERVER)
    assert not long, "split these functions (AGENTS.md, Complexity):\n" + "\n".join(long)


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    pkg = tmp_path / "server"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (pkg / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert _long_functions(pkg) == ["server/m.py:5 long (101 lines)"]


TESTS = SERVER.parent / "tests"
_CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _flaky_patterns(path: Path) -> list[str]:
    """Sleeps, asserts on the wall clock, and exception checks by type name (AGENTS.md, "Tests")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Call) and _dotted(node.func) in ("time.sleep", "asyncio.sleep", "sleep"):
            found.append(f"{path.name}:{node.lineno} sleeps (use tests.waiting.wait_until)")
        if isinstance(node, ast.Assert):
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Call) and _dotted(sub.func).split(".")[-1] in _CLOCKS:
                    found.append(f"{path.name}:{node.lineno} asserts on the wall clock")
                    break
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Attribute) and side.attr == "__name__":
                    found.append(
                        f"{path.name}:{node.lineno} compares a type name (use pytest.raises(<Error>))"
                    )
    return found


def _test_modules() -> list[Path]:
    """Test code: not fixtures, not fake tools (programs that stand in for a GPU tool and may hang on
    purpose), not the red teams' candidates (attacks on the guard that wait on their own threads or hang on
    purpose: tests/guard/redteam, and the isolated corpus's cases and helpers beside its tests), not the one
    waiting helper."""
    return [
        p
        for p in sorted(TESTS.rglob("*.py"))
        if "fixtures" not in p.parts
        and "redteam" not in p.parts
        and not ("isolated" in p.parts and "guard" in p.parts and not p.name.startswith("test_"))
        and not p.name.startswith("fake_")
        and p.name != "waiting.py"
    ]


def test_tests_do_not_sleep_time_or_compare_type_names() -> None:
    found = [f for p in _test_modules() for f in _flaky_patterns(p)]
    assert not found, "\n".join(found)


def test_the_flaky_pattern_check_finds_each_pattern(tmp_path: Path) -> None:
    bad = tmp_path / "test_bad.py"
    bad.write_text(
        "import time\n"
        "def test_x(err):\n"
        "    t0 = time.monotonic()\n"
        "    time.sleep(0.1)\n"
        "    assert time.monotonic() - t0 < 5\n"
        "    assert type(err).__name__ == 'Boom'\n"
    )
    found = _flaky_patterns(bad)
    assert sorted(f.split(" ", 1)[0] for f in found) == ["test_bad.py:4", "test_bad.py:5", "test_bad.py:6"]
