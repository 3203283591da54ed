"""The package's module import graph, read with ``ast``, and its cycles.

Every import counts: module level, inside functions, and under ``if TYPE_CHECKING:``. A
deferred import still ties two modules together; it only moves the failure from import time
to the first call (or hides it from the type checker's view of the layers). import-linter
does not see function-level imports, so this graph is the judge for cycles
(tests/test_imports.py).

Run it as a script to print the strongly connected components of size > 1:
``python tests/importgraph.py`` (exit 1 when there is one).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "campaignops"
SRC = Path(__file__).resolve().parent.parent / "src"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    deferred: bool  # inside a function or under TYPE_CHECKING


def module_names(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package: dotted name → file."""
    names: dict[str, Path] = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, is_package: bool, node: ast.AST, known: set[str]) -> Iterator[str]:
    """The package modules one import statement binds (the deepest known module per name)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name
    elif isinstance(node, ast.ImportFrom):
        base = _resolve(module, is_package, node)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if full in known:
                yield full  # `from pkg import submodule`
                continue
            name = base
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, deferred: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.body:
                yield sub, True
                yield from _walk(sub, True)
            for sub in child.orelse:
                yield sub, deferred
                yield from _walk(sub, deferred)
            continue
        yield child, inner
        yield from _walk(child, inner)


def edges(src: Path = SRC) -> list[Edge]:
    """Every import of a package module by a package module."""
    names = module_names(src)
    known = set(names)
    found: list[Edge] = []
    for module, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node, deferred in _walk(tree, False):
            for target in _targets(module, is_package, node, known):
                if target != module and target.startswith(PACKAGE):
                    line = getattr(node, "lineno", 0)
                    found.append(Edge(module, target, line, deferred))
    return found


def cycles(graph_edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for edge in graph_edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(components)


def describe(graph_edges: list[Edge], component: list[str]) -> str:
    """One component with the imports that tie it, deferred ones marked."""
    members = set(component)
    lines = [f"cycle of {len(component)}: {', '.join(component)}"]
    for edge in graph_edges:
        if edge.source in members and edge.target in members:
            mark = " (deferred)" if edge.deferred else ""
            lines.append(f"  {edge.source}:{edge.line} -> {edge.target}{mark}")
    return "\n".join(lines)


def main() -> int:
    graph_edges = edges()
    found = cycles(graph_edges)
    for component in found:
        print(describe(graph_edges, component))
    print(f"{len(found)} cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
