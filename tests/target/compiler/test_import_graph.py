"""The modules of p4target/compiler and p4target/frontend import one another without a
cycle, counting the imports made only for the type checker (docs/target-internals.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module name -> the modules of the same package it imports (anywhere in the file)."""
    prefix = ".".join(package.relative_to(ROOT).parts)
    modules = {f"{prefix}.{f.stem}" for f in package.glob("*.py") if f.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for f in package.glob("*.py"):
        if f.stem == "__init__":
            continue
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                deps |= {m for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if m in modules}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in modules}
        graph[f"{prefix}.{f.stem}"] = deps - {f"{prefix}.{f.stem}"}
    return graph


def a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules in import order), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert a_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("package", ["p4target/compiler", "p4target/frontend"])
def test_no_import_cycle(package: str) -> None:
    graph = import_graph(ROOT / package)
    assert len(graph) > 5
    assert a_cycle(graph) is None, " -> ".join(a_cycle(graph) or [])
