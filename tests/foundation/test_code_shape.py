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
