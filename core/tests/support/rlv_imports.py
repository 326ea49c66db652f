"""The import graph of the repository's own packages, read from the source (nothing is
imported): which module imports which at run time, cycles, and what a module reaches."""

from __future__ import annotations

import ast
from pathlib import Path


def module_files(sources: list[Path]) -> dict[str, Path]:
    """Every module under ``sources`` by dotted name (a package by its ``__init__.py``)."""
    found = {}
    for src in sources:
        for path in src.rglob("*.py"):
            parts = path.relative_to(src).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _under_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def runtime_imports(path: Path, known: dict[str, Path]) -> set[str]:
    """First-party modules ``path`` imports when it runs, lazy (function-level) imports
    included and ``if TYPE_CHECKING:`` blocks left out. ``from package import name``
    counts as an import of ``package.name`` when that is a module, else of ``package``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _under_type_checking(child):
                for statement in getattr(child, "orelse", []):
                    visit_one(statement)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.update([full] if full in known else [base] if base in known else [])
        visit(node)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def import_graph(sources: list[Path]) -> dict[str, set[str]]:
    """Each module under ``sources`` with the modules of ``sources`` it imports at run time."""
    known = module_files(sources)
    return {name: runtime_imports(path, known) - {name} for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph[node])
    return seen
