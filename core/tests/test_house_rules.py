"""House rules no linter checks (docs/style.md): services and selectors never raise Http404.

A service or selector that cannot find what it was asked for raises ``core.errors.NotFound`` (a
``DomainError``); turning a missing object into a 404 page is the job of the views' access helpers
(``workspaces/access.py``), and the API maps ``NotFound`` itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".venv", "var", "node_modules", ".git", "__pycache__", "migrations", "tests", "static", "templates"}
# Names that raise Http404 for their caller.
HTTP404_NAMES = {"Http404", "get_object_or_404", "get_list_or_404"}
# Known offenders (none left: the run family's lookups live in runs/lookups.py, an access helper).
PENDING: set[str] = set()


def _service_and_selector_modules() -> list[Path]:
    """Every ``services.py``, module of a ``services/`` package and ``selectors.py`` (or ``selectors/``)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if any(part in SKIP_DIRS for part in parts[:-1]):
            continue
        if path.name in ("services.py", "selectors.py") or any(part in ("services", "selectors") for part in parts[:-1]):
            found.append(path)
    return found


def _http404_uses(path: Path) -> list[str]:
    """Where the module imports or names an Http404-raising name (``line: name``)."""
    uses = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            uses += [f"{node.lineno}: {alias.name}" for alias in node.names if alias.name in HTTP404_NAMES]
        elif isinstance(node, ast.Attribute) and node.attr in HTTP404_NAMES:
            uses.append(f"{node.lineno}: {node.attr}")
    return uses


def _offenders() -> dict[str, list[str]]:
    return {str(path.relative_to(ROOT)): uses for path in _service_and_selector_modules() if (uses := _http404_uses(path))}


def test_the_scan_finds_the_services_and_selectors_it_checks():
    scanned = {str(path.relative_to(ROOT)) for path in _service_and_selector_modules()}
    assert {"infrastructure/services/deployments.py", "packs/selectors.py", "workspaces/services.py"} <= scanned


def test_the_scan_notices_an_http404_import(tmp_path):
    module = tmp_path / "services.py"
    module.write_text("from django.http import Http404\nfrom django import shortcuts\nshortcuts.get_object_or_404\n")
    assert _http404_uses(module) == ["1: Http404", "3: get_object_or_404"]


def test_services_and_selectors_never_raise_http404():
    offenders = _offenders()
    new = {path: uses for path, uses in offenders.items() if path not in PENDING}
    assert not new, f"Raise core.errors.NotFound (a DomainError) instead of Http404 in: {new}"
    cleared = sorted(PENDING - set(offenders))
    assert not cleared, f"No longer raise Http404 (or moved): remove from PENDING: {cleared}"


# Rules and designs the code follows live in this repository (docs/style.md, docs/architecture.md):
# a reference to a file outside it (the workspace's shared notes) is a dead link for every reader.
OUTSIDE_REFERENCES = re.compile(r"\.\./shared|(?<![\w/])(?:STYLE|DESIGN)\.md")
CITING_SUFFIXES = {".py", ".md", ".html", ".toml", ".js", ".css", ".txt", ".yaml", ".yml", ".sh"}


def _outside_references() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        parts = path.relative_to(ROOT).parts
        if path.suffix not in CITING_SUFFIXES or any(part in {".venv", "var", "node_modules", ".git", "static"} for part in parts):
            continue
        if not path.is_file() or path == Path(__file__):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE_REFERENCES.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    return found


def test_the_reference_check_notices_a_citation_outside_the_repository():
    assert OUTSIDE_REFERENCES.search("see ../shared/DESIGN.md") and OUTSIDE_REFERENCES.search("(STYLE.md §12)")
    assert not OUTSIDE_REFERENCES.search("(docs/style.md §18)")


def test_code_and_docs_cite_only_what_is_in_the_repository():
    found = _outside_references()
    assert not found, "Cite docs/style.md or docs/architecture.md instead:\n" + "\n".join(found)
