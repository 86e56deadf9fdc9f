#!/usr/bin/env python3
"""Check that imports point one way: between the project's packages, and inside each app.

**Layers**, bottom to top (a module may import only from its own layer and the layers below):

    core ← workspaces ← secrets_app ← infrastructure ← artifacts ← packs
         ← runs (record) ← scoring ← regression ← runs ← comparisons

``runs (record)`` is the part of ``runs`` every layer of the run family reads: the models, the
event store with the lane row's writer (``runs.events``, ``runs.ticker``), the shared lookups
(``runs.lookups``), provider limits (``runs.throttle``) and the statement adapter (``runs.adapters``). The rest of ``runs``
(the pipeline, run creation, the pages and the API) sits above scoring and regression, because it
scores cases and adds regression suites to runs; scoring and regression read runs only through
the record. A module belongs to the longest layer prefix that names it.

``bundle`` and ``engine`` are pure: they import nothing of the project (``engine`` and ``bundle``
exchange plain data only). Every app may import them. ``agentclash`` (settings, URLs, Celery)
only wires: it may import anything, and nothing imports it. ``cli`` talks to the API only; its
tests drive it against the whole stack. An app's ``tests/`` may import any app; tests of
``bundle`` and ``engine`` stay pure.

**Inside an app** (tests aside), its sub-packages and modules (``runs.services``,
``runs.selectors``, ``regression.failures`` …) form no cycle, and by kind:

- selectors (reads) never import presenters, services, forms, views or the API layer;
- presenters never import services, forms, views or the API layer;
- services (writes, ``services.py`` or a ``services/`` package, the pipeline) never import
  forms, views or the API layer.

Function-level imports count the same as module-level ones. Exit status 1 on any violation.

Usage: python scripts/import_graph.py [--graph]
"""

from __future__ import annotations

import ast
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUNS_RECORD = (
    "runs.models",
    "runs.events",
    "runs.ticker",
    "runs.lookups",
    "runs.throttle",
    "runs.adapters",
)
# Bottom to top; each entry is one layer, named by its first prefix unless it is the runs record.
LAYERS: list[tuple[str, ...]] = [
    ("core",),
    ("workspaces",),
    ("secrets_app",),
    ("infrastructure",),
    ("artifacts",),
    ("packs",),
    RUNS_RECORD,
    ("scoring",),
    ("regression",),
    ("runs",),
    ("comparisons",),
]
APPS = ["core", "workspaces", "secrets_app", "infrastructure", "artifacts", "packs", "runs", "scoring", "regression", "comparisons"]
PURE = {"bundle", "engine", "cli"}
STACK_TESTED = {"cli"}
WIRING = "agentclash"
TOP_LEVEL = {*APPS, *PURE, WIRING}
SKIP_DIRS = {".venv", "var", "node_modules", ".git", "__pycache__", "migrations"}

# Kinds of module inside an app and the kinds each may not import.
READ_KINDS = {"selectors", "lookups"}
WRITE_KINDS = {"services", "pipeline"}
FORBIDDEN: dict[str, set[str]] = {
    "read": {"presenters", "write", "forms", "views", "api"},
    "presenters": {"write", "forms", "views", "api"},
    "write": {"forms", "views", "api"},
}


def layer_of(module: str) -> int | None:
    """Index in LAYERS of the longest prefix naming ``module`` (None outside the apps)."""
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def layer_name(index: int) -> str:
    return "runs (record)" if LAYERS[index] is RUNS_RECORD else LAYERS[index][0]


def kind_of(module: str) -> str | None:
    """The kind of an app module by its path (``runs.services.create`` → write), or None."""
    parts = module.split(".")[1:]
    for part in parts:
        if part in READ_KINDS:
            return "read"
        if part in WRITE_KINDS:
            return "write"
        if part in {"presenters", "forms", "views", "api"}:
            return part
    return None


def unit_of(module: str) -> str:
    """An app's sub-package or module (``runs.services``, ``regression.failures``): the nodes of the cycle check."""
    return ".".join(module.split(".")[:2])


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> list[str]:
    """Absolute module names an ``ImportFrom`` reaches (``from runs import services`` → runs.services)."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join([*base, node.module] if node.module else base)
    else:
        prefix = node.module or ""
    return [f"{prefix}.{alias.name}" if alias.name != "*" else prefix for alias in node.names]


def imports_of(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, at function level?) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.extend((child.lineno, name, inner) for name in _resolve(module, child, is_package))
            visit(child, inner)

    visit(tree, False)
    return found


def python_files() -> list[Path]:
    """Every .py file of the project's top-level packages (never var/, .venv/ or migrations)."""
    found: list[Path] = []
    for top in sorted(TOP_LEVEL):
        for folder, dirs, files in os.walk(ROOT / top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            found.extend(Path(folder) / name for name in sorted(files) if name.endswith(".py"))
    return found


def between_packages(src: str, dst: str, *, in_tests: bool) -> str | None:
    """Why ``src`` may not import ``dst`` across top-level packages or layers, or None."""
    top_src, top_dst = src.split(".")[0], dst.split(".")[0]
    if dst == WIRING or top_dst == WIRING:
        return None if top_src == WIRING else "nothing imports the wiring"
    if top_src == WIRING or top_dst not in TOP_LEVEL:
        return None
    if top_src in PURE:
        if in_tests and top_src in STACK_TESTED:
            return None
        return None if top_dst == top_src else f"{top_src} is pure"
    if top_dst in PURE:
        return None
    if in_tests:
        return None
    low, high = layer_of(dst), layer_of(src)
    if low is None or high is None or low <= high:
        return None
    return f"{layer_name(high)} is below {layer_name(low)}"


def inside_app(src: str, dst: str) -> str | None:
    """Why ``src`` may not import ``dst`` by kind (selectors, presenters, services), or None."""
    kind, target = kind_of(src), kind_of(dst)
    if kind is None or target is None or kind == target:
        return None
    if target in FORBIDDEN.get(kind, set()):
        return f"{kind} must not import {target}"
    return None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one unit (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = [0]

    def strong(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                strong(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            strong(node)
    return groups


def check() -> tuple[list[str], dict[str, set[str]]]:
    violations: list[str] = []
    top_edges: dict[str, set[str]] = defaultdict(set)
    unit_edges: dict[str, set[str]] = defaultdict(set)
    witness: dict[tuple[str, str], str] = {}
    for path in python_files():
        rel = path.relative_to(ROOT)
        src = _module_name(path)
        in_tests = "tests" in rel.parts
        for line, dst, nested in imports_of(path):
            top_dst = dst.split(".")[0]
            if top_dst not in TOP_LEVEL:
                continue
            where = "function-level " if nested else ""
            if top_dst != rel.parts[0]:
                top_edges[rel.parts[0]].add(top_dst)
            reason = between_packages(src, dst, in_tests=in_tests)
            if reason:
                violations.append(f"{rel}:{line}: {where}import of {dst}: {reason}")
                continue
            if in_tests or top_dst != rel.parts[0] or rel.parts[0] not in APPS:
                continue
            reason = inside_app(src, dst)
            if reason:
                violations.append(f"{rel}:{line}: {where}import of {dst}: {reason}")
            a, b = unit_of(src), unit_of(dst)
            if a != b and a.count(".") == 1 and b.count(".") == 1:
                unit_edges[a].add(b)
                witness.setdefault((a, b), f"{rel}:{line}")
    for group in cycles(unit_edges):
        links = [f"{a} → {b} ({witness[a, b]})" for a in group for b in sorted(unit_edges[a]) if b in group]
        violations.append(f"cycle between {', '.join(group)}: " + "; ".join(links))
    return violations, top_edges


def main(argv: list[str]) -> int:
    violations, edges = check()
    if "--graph" in argv:
        for src in sorted(edges):
            print(f"{src} -> {', '.join(sorted(edges[src]))}")
    for violation in violations:
        print(violation)
    if violations:
        order = " ← ".join(layer_name(i) for i in range(len(LAYERS)))
        print(f"{len(violations)} import problem(s) (layers: {order}; bundle, engine pure; see the docstring)")
        return 1
    print("import graph: every dependency points one way")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
