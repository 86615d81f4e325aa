"""The import contracts hold and the import graph has no circle.

The contracts (``[tool.importlinter]`` in ``pyproject.toml``: the layers, "only ``reverie.lsp``
imports pygls / lsprotocol", "only ``reverie.mcp`` imports the MCP SDK") are run with
import-linter itself, as CI does with ``lint-imports``. The circles are found on the graph
import-linter builds (grimp), which counts every import: module level, inside functions (lazy)
and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import circles of a graph: its strongly connected components of more than one node
    (and the nodes that import themselves). Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    circles: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
                    if len(component) > 1 or node in edges.get(node, ()):
                        circles.append(sorted(component))
    return circles


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("reverie", cache_dir=None)


def test_the_import_contracts_hold() -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_no_module_imports_a_module_that_imports_it_back(graph: grimp.ImportGraph) -> None:
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert strongly_connected(edges) == []


def test_no_package_imports_a_package_that_imports_it_back(graph: grimp.ImportGraph) -> None:
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if package(imported) != package(module):
                edges.setdefault(package(module), set()).add(package(imported))
    assert strongly_connected(edges) == []


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert strongly_connected(edges) == [["a", "b", "c"], ["e"]]
