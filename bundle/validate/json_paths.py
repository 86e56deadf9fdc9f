"""JSON paths the scorer reads (``json_path_match`` validators and postconditions), checked at publish.

The path grammar is the scorer's (``engine.scoring.validators.structured.parse_path``); ``bundle``
may not import ``engine``, so the Django side hands its checker in through the
:class:`~bundle.lint.Installation` (``packs/installation.py``). Without one (bundle-only tests),
nothing is checked here and a bad path is still a pack error when cases are scored.

Where a path lives: a ``literal:`` expectation (``$.a.b``, or ``{"path": "$.a.b", ...}``), each
case expectation a ``case.expectations.KEY`` reference reads, or a postcondition's
``config.json_path``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

PathError = Callable[[str], "str | None"]

SPEC = "version.evaluation_spec"
LITERAL = "literal:"
EXPECTATIONS = "case.expectations."
HINT = "write a path the scorer reads, like $.name, $.items[0] or $['odd key']"


def json_path_problems(bundle: dict[str, Any], path_error: PathError) -> list[tuple[str, str]]:
    """``(field, message)`` for each JSON path of the bundle the scorer cannot parse."""
    problems: list[tuple[str, str]] = []
    for field, path in _paths(bundle):
        problem = path_error(path)
        if problem:
            problems.append((field, f"is not a JSON path the scorer reads ({problem}): {HINT}"))
    return problems


def _paths(bundle: dict[str, Any]) -> Iterator[tuple[str, str]]:
    spec = (bundle.get("version") or {}).get("evaluation_spec") or {}
    for i, validator in enumerate(spec.get("validators") or ()):
        if not isinstance(validator, dict):
            continue
        base = f"{SPEC}.validators[{i}]"
        kind = validator.get("type")
        raw = validator.get("config")
        config: dict[str, Any] = raw if isinstance(raw, dict) else {}
        json_path = config.get("json_path")
        if kind == "postcondition" and config.get("condition") == "json_path_match" and isinstance(json_path, str) and json_path.strip():
            yield f"{base}.config.json_path", json_path
        if kind != "json_path_match":
            continue
        expected = validator.get("expected_from")
        expected = expected.strip() if isinstance(expected, str) else ""
        if expected.startswith(LITERAL):
            path = _path_of(expected[len(LITERAL) :])
            if path is not None:
                yield f"{base}.expected_from", path
        elif expected.startswith(EXPECTATIONS):
            yield from _expectation_paths(bundle, expected[len(EXPECTATIONS) :].strip())


def _expectation_paths(bundle: dict[str, Any], key: str) -> Iterator[tuple[str, str]]:
    for j, input_set in enumerate(bundle.get("input_sets") or ()):
        for k, case in enumerate((input_set or {}).get("cases") or () if isinstance(input_set, dict) else ()):
            for m, expectation in enumerate((case or {}).get("expectations") or () if isinstance(case, dict) else ()):
                if not isinstance(expectation, dict) or expectation.get("key") != key:
                    continue
                value = expectation.get("value")
                text = value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict) else None
                path = _path_of(text) if text is not None else None
                if path is not None:
                    yield f"input_sets[{j}].cases[{k}].expectations[{m}].value", path


def _path_of(text: str) -> str | None:
    """The path of an expectation as the scorer reads it: the text when it starts with ``$``, else a
    JSON object's ``path``; None when there is none to check (other problems are reported elsewhere)."""
    text = text.strip()
    if text.startswith("$"):
        return text
    try:
        spec = json.loads(text)
    except ValueError:
        return None
    path = spec.get("path") if isinstance(spec, dict) else None
    return path if isinstance(path, str) else None
