"""No import cycle inside `kernelpilot` (AGENTS.md, "Import rules"): the modules form a layered graph.

A cycle works only while every module in it happens to finish defining what the others use first, and a
function-level import that defers one is the same cycle, hidden. So the graph counts module-level imports
(also inside module-level `if`/`try`) and, in a second test, imports inside functions too; imports under
`if TYPE_CHECKING:` never run and are left out. The cycle search is the standard library's `graphlib`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"
PACKAGE = "kernelpilot"


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package under `root`."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imports(body: list[ast.stmt], anywhere: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _type_checking(node):
            yield from _imports(node.orelse, anywhere)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if anywhere or isinstance(node, ast.ClassDef):
                yield from _imports(node.body, anywhere)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    yield from _imports([child], anywhere)
                elif isinstance(child, ast.ExceptHandler | ast.match_case):
                    yield from _imports(child.body, anywhere)


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, mods: dict[str, Path]
) -> set[str]:
    """The package modules an import statement loads (a `from m import x` loads m.x when x is a module)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)]
            base = ".".join([*here, base] if base else here)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def import_graph(root: Path, anywhere: bool = False) -> dict[str, set[str]]:
    """Module -> the package modules it imports."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {}
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[module] = set()
        for node in _imports(tree.body, anywhere):
            graph[module] |= _targets(node, module, path.name == "__init__.py", mods)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each cycle as 'a -> b -> a' (a imports b); one edge of each is set aside to look for the next."""
    graph = {k: set(v) for k, v in graph.items()}
    found = []
    while True:
        try:
            TopologicalSorter(graph).prepare()
            return found
        except CycleError as exc:
            cycle = list(reversed(exc.args[1]))  # graphlib lists each node before the module that imports it
            found.append(" -> ".join(cycle))
            graph[cycle[0]].discard(cycle[1])


def test_no_import_cycle_at_module_level() -> None:
    cycles = import_cycles(import_graph(SERVER))
    assert not cycles, "move what the modules share to where it belongs:\n" + "\n".join(cycles)


def test_no_import_cycle_deferred_into_a_function() -> None:
    cycles = import_cycles(import_graph(SERVER, anywhere=True))
    assert not cycles, "a function-level import hides this cycle; break it instead:\n" + "\n".join(cycles)


def test_the_check_finds_cycles(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from kernelpilot.sub import b\n")
    (pkg / "sub" / "b.py").write_text("try:\n    from .. import a\nexcept ImportError:\n    pass\n")
    (pkg / "c.py").write_text("def f():\n    from kernelpilot import d\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nimport kernelpilot.c\n")
    (pkg / "e.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kernelpilot import f\n"
    )
    (pkg / "f.py").write_text("from kernelpilot.e import x\n")
    top = import_graph(tmp_path)
    assert top["kernelpilot.a"] == {"kernelpilot.sub.b"} and top["kernelpilot.e"] == set()
    assert import_cycles(top) in (
        ["kernelpilot.a -> kernelpilot.sub.b -> kernelpilot.a"],
        ["kernelpilot.sub.b -> kernelpilot.a -> kernelpilot.sub.b"],
    )
    deferred = import_cycles(import_graph(tmp_path, anywhere=True))
    assert len(deferred) == 2 and any("kernelpilot.c" in c and "kernelpilot.d" in c for c in deferred)
