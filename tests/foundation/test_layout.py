"""The package's layout rules (AGENTS.md, "Layout" and "Import rules"), held by reading the source.

Only `__init__.py` and `__main__.py` at the package root: every module belongs to a concept, to `foundation`
(what all concepts build on), `host` (the machine) or `adapters` (CLI, MCP, generated reference). The core
never imports an adapter or the MCP SDK, and `foundation` imports nothing else of kernelpilot, so the
layers stay a stack; imports inside functions count too (a deferred import is the same dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "server" / "kernelpilot"


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _package(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else ""


def test_only_init_and_main_lie_at_the_package_root():
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, (
        f"modules at the package root: {loose}; move each into its concept, foundation, host or adapters"
    )


def test_core_never_imports_adapters_or_the_mcp_sdk():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        if _package(path) in ("adapters", ""):
            continue
        for name in _imported(path):
            if name.startswith("kernelpilot.adapters") or name == "mcp" or name.startswith("mcp."):
                bad.append(f"{path.relative_to(PKG)} imports {name}")
    assert not bad, "\n".join(bad)


def test_foundation_imports_nothing_else_of_kernelpilot():
    bad = []
    for path in sorted((PKG / "foundation").rglob("*.py")):
        for name in _imported(path):
            if name.startswith("kernelpilot.") and not name.startswith("kernelpilot.foundation"):
                bad.append(f"{path.relative_to(PKG)} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_rules_see_real_imports():
    """The scanner is not vacuous: the CLI adapter does import the capability registry and the foundation."""
    names = _imported(PKG / "adapters" / "cli.py")
    assert "kernelpilot.capabilities" in {n.rsplit(".", 1)[0] for n in names} | names
    assert any(n.startswith("kernelpilot.foundation") for n in names)
