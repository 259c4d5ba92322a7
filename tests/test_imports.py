"""Imports point one way: scenarios -> agents -> skills -> market, and no cycle among modules or among packages.

Read from the source (every ``import`` and ``from ... import`` statement, those inside functions included: a lazy
import is an arrow too), so a cycle a run would never trip over at import time still fails here. A package is a
folder; a module's package is its folder (a package's ``__init__`` belongs to the package itself).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("scenarios", "agents", "skills", "market")
"""Top to bottom: a package may import those below it, never one above."""


def modules() -> dict[str, Path]:
    out = {}
    for top in LAYERS:
        for path in (ROOT / top).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def arrows(found: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project's modules it imports (a name imported from a package is its module where one exists)."""
    def resolve(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    out = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets |= {f"{base}.{alias.name}" for alias in node.names}
        out[name] = {t for t in map(resolve, targets) if t and t != name}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_modules_or_packages_and_layers_point_down():
    found = modules()
    graph = arrows(found)
    assert cycles(graph) == []
    package = {name: name if path.name == "__init__.py" else name.rpartition(".")[0] for name, path in found.items()}
    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        packages.setdefault(package[name], set()).update(package[t] for t in targets if package[t] != package[name])
    assert cycles(packages) == []
    upward = sorted((name, t) for name, targets in graph.items() for t in targets
                    if LAYERS.index(t.split(".")[0]) < LAYERS.index(name.split(".")[0]))
    assert upward == []


def test_the_check_finds_a_package_cycle():
    """The same check on a made-up graph: two packages importing each other through different modules."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
