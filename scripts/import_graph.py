#!/usr/bin/env python3
"""Check that imports between the project's top-level packages point one way.

Layers, bottom to top (an app may import only from layers below it and from itself):

    core ← workspaces ← secrets_app ← infrastructure ← artifacts ← packs ← runs

``bundle`` and ``engine`` are pure: they import nothing of the project except each other in
one direction (``bundle`` may not import ``engine`` and ``engine`` may not import ``bundle``
except through plain data). Every app may import ``bundle`` and ``engine``. ``agentclash``
(settings, URLs, Celery) only wires: it may import anything, and nothing imports it. ``cli`` (the
standalone ``agentclash`` command) talks to the API only: it imports nothing of the project, but
its tests drive it against a live server of the whole stack, so they may import any app.
Function-level imports count the same as module-level ones. An app's ``tests/`` drive it through
the whole stack (URLs, fixtures of every layer), so they may import any app; tests of ``bundle``
and ``engine`` stay pure. Exit status 1 on any violation.

Usage: python scripts/import_graph.py [--graph]
"""

from __future__ import annotations

import ast
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP_LAYERS = ["core", "workspaces", "secrets_app", "infrastructure", "artifacts", "packs", "runs"]
PURE: dict[str, set[str]] = {"bundle": set(), "engine": set(), "cli": set()}
# Pure packages whose tests run against the whole stack (a live server and a worker).
STACK_TESTED = {"cli"}
WIRING = "agentclash"
TOP_LEVEL = {*APP_LAYERS, *PURE, WIRING}
SKIP_DIRS = {".venv", "var", "node_modules", ".git", "__pycache__", "migrations"}


def _allowed(src: str, dst: str, *, in_tests: bool = False) -> bool:
    if in_tests and (src in APP_LAYERS or src in STACK_TESTED) and dst in APP_LAYERS:
        return True
    if src == dst:
        return True
    if dst == WIRING:
        return False
    if src == WIRING:
        return True
    if src in PURE:
        return dst in PURE[src]
    if dst in PURE:
        return True
    if src in APP_LAYERS and dst in APP_LAYERS:
        return APP_LAYERS.index(dst) < APP_LAYERS.index(src)
    return True


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported top-level package, at function level?) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name.split(".")[0], inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.lineno, child.module.split(".")[0], inner))
            visit(child, inner)

    visit(tree, False)
    return found


def _python_files() -> list[Path]:
    """Every .py file of the project's top-level packages (never var/, .venv/ or migrations)."""
    found: list[Path] = []
    for top in sorted(TOP_LEVEL):
        for folder, dirs, files in os.walk(ROOT / top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            found.extend(Path(folder) / name for name in sorted(files) if name.endswith(".py"))
    return found


def main(argv: list[str]) -> int:
    violations: list[str] = []
    edges: dict[str, set[str]] = defaultdict(set)
    for path in _python_files():
        rel = path.relative_to(ROOT)
        src = rel.parts[0]
        for line, dst, nested in _imports(path):
            if dst not in TOP_LEVEL or dst == src:
                continue
            edges[src].add(dst)
            if not _allowed(src, dst, in_tests="tests" in rel.parts):
                where = "function-level " if nested else ""
                violations.append(f"{rel}:{line}: {src} must not {where}import {dst}")
    if "--graph" in argv:
        for src in sorted(edges):
            print(f"{src} -> {', '.join(sorted(edges[src]))}")
    for violation in violations:
        print(violation)
    if violations:
        print(f"{len(violations)} import(s) point the wrong way (layers: {' ← '.join(APP_LAYERS)}; bundle, engine pure)")
        return 1
    print("import graph: every dependency points one way")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
