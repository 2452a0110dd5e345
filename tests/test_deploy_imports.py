"""No import cycles among the modules of ``newscrawl/``.

Every ``import`` and ``from ... import`` of a newscrawl module is an edge, including imports
inside functions (a cycle through a function-level import still ties the two modules together:
neither can be read, tested or moved without the other). Imports under ``if TYPE_CHECKING:`` are
left out: they never run. A package's ``__init__`` importing its own submodules is an edge like any
other; a submodule is not taken to import its package. The test reads the source only, nothing is
imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "newscrawl"


def module_names(root: Path = PACKAGE) -> dict[str, Path]:
    """``{"newscrawl.cli._common": path, "newscrawl.cli": path/__init__.py, ...}``"""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules ``module`` imports: ``from P import x`` is an edge to ``P.x`` when that is a
    module, else to ``P``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                sub = f"{origin}.{alias.name}"
                found.add(sub if sub in modules else origin)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the newscrawl modules it imports."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        targets = _imports(tree, name, path.name == "__init__.py", set(modules))
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def strong(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycle_in_newscrawl() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles among newscrawl modules: " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_the_check_sees_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    pkg = tmp_path / "newscrawl"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text(
        "def add():\n    from newscrawl.cli.dedup import add_parser\n"
    )
    (pkg / "cli" / "dedup.py").write_text("from newscrawl.cli import CliError\n")
    (pkg / "cli" / "_common.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import dedup\n"
    )
    (pkg / "cli" / "fine.py").write_text("from ._common import x\nfrom . import dedup\n")
    graph = import_graph(pkg)
    assert graph["newscrawl.cli._common"] == set()  # TYPE_CHECKING only
    assert graph["newscrawl.cli.fine"] == {"newscrawl.cli._common", "newscrawl.cli.dedup"}
    assert cycles(graph) == [["newscrawl.cli", "newscrawl.cli.dedup"]]
