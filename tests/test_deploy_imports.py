"""No import cycles among the modules of ``newscrawl/``, counted the way Python imports.

Importing ``a.b.c`` runs ``a/__init__``, then ``a/b/__init__``, then ``a/b/c``: an import statement
is an edge to the module it names and to each package above it, since their ``__init__`` runs too
(the packages above the importing module itself are left out: they are already initialized, or
being initialized, when it runs, and a submodule taken from a package mid-initialization is
loaded fine). ``from P import x`` names ``P.x`` when that is a module, else ``P``. Imports inside
functions are edges (a cycle through one still ties the modules together); imports under
``if TYPE_CHECKING:`` are not (they never run). The test reads the source only.
"""

from __future__ import annotations

import ast
import subprocess
import sys
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


def _ancestors(module: str) -> list[str]:
    """``a.b.c`` -> ``["a", "a.b"]``"""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _named(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules ``module``'s import statements name (TYPE_CHECKING blocks left out)."""
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
    """Module -> the newscrawl modules that importing it runs directly (see the docstring)."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        own = set(_ancestors(name))
        edges: set[str] = set()
        for target in _named(tree, name, path.name == "__init__.py", set(modules)):
            edges.update(p for p in _ancestors(target) if p not in own)
            edges.add(target)
        graph[name] = {t for t in edges if t in modules and t != name}
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


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "newscrawl"


def test_the_check_sees_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "newscrawl/__init__.py": "",
        "newscrawl/cli/__init__.py": "def add():\n    from newscrawl.cli.dedup import add_parser\n",
        "newscrawl/cli/dedup.py": "from newscrawl.cli import CliError\n",
        "newscrawl/cli/_common.py":
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import dedup\n",
        "newscrawl/cli/fine.py": "from ._common import x\nfrom . import dedup\n",
    })
    graph = import_graph(pkg)
    assert graph["newscrawl.cli._common"] == set()  # TYPE_CHECKING only
    assert graph["newscrawl.cli.fine"] == {"newscrawl.cli._common", "newscrawl.cli.dedup"}
    assert cycles(graph) == [["newscrawl.cli", "newscrawl.cli.dedup"]]


def test_the_check_sees_a_cycle_through_a_package_init(tmp_path: Path) -> None:
    # ext.throttle imports sched.queue, which runs sched/__init__, which imports sched.scheduler,
    # which imports ext.throttle: no two modules name each other, yet importing either fails
    pkg = _tree(tmp_path, {
        "newscrawl/__init__.py": "",
        "newscrawl/ext/__init__.py": "",
        "newscrawl/ext/throttle.py": "from newscrawl.sched.queue import Throttle\n",
        "newscrawl/sched/__init__.py": "from newscrawl.sched.scheduler import Scheduler\n",
        "newscrawl/sched/queue.py": "from newscrawl.sched import lua\n",
        "newscrawl/sched/lua.py": "",
        "newscrawl/sched/scheduler.py": "import newscrawl.ext.throttle\n",
    })
    graph = import_graph(pkg)
    assert graph["newscrawl.ext.throttle"] == {"newscrawl.sched", "newscrawl.sched.queue"}
    # a submodule naming a sibling through its own package does not depend on the package
    assert graph["newscrawl.sched.queue"] == {"newscrawl.sched.lua"}
    assert cycles(graph) == [["newscrawl.ext.throttle", "newscrawl.sched",
                              "newscrawl.sched.scheduler"]]
    (pkg / "sched" / "__init__.py").write_text('"""A thin package."""\n')
    assert cycles(import_graph(pkg)) == []


def test_the_model_matches_python(tmp_path: Path) -> None:
    # the cycle the check reports is one Python trips on: importing the module fails
    _tree(tmp_path, {
        "newscrawl/__init__.py": "",
        "newscrawl/ext/__init__.py": "",
        "newscrawl/ext/throttle.py": "from newscrawl.sched.queue import Throttle\n",
        "newscrawl/sched/__init__.py": "from newscrawl.sched.scheduler import Scheduler\n",
        "newscrawl/sched/queue.py": "Throttle = 1\n",
        "newscrawl/sched/scheduler.py":
            "from newscrawl.ext.throttle import Throttle\nScheduler = 2\n",
    })
    run = subprocess.run([sys.executable, "-c", "import newscrawl.ext.throttle"], cwd=tmp_path,
                         capture_output=True, text=True, check=False)
    assert "ImportError" in run.stderr
    assert cycles(import_graph(tmp_path / "newscrawl")) != []
