"""Builders for the per-rule tests: a fresh valid bundle, mutations of it, and its errors."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from bundle import process_bundle

from .conftest import BASE

ES = "version.evaluation_spec"
Mutation = Callable[[dict[str, Any]], object]
Errors = list[tuple[str, str]]


def spec(b: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = b["version"]["evaluation_spec"]
    return result


def case(b: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = b["input_sets"][0]["cases"][0]
    return result


def manifest_of(source: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """The manifest of a bundle that must be valid."""
    result = process_bundle(source)
    assert result.manifest is not None, result.error_text
    return result.manifest


def errors_after(mutate: Mutation) -> Errors:
    """Every ``(field, message)`` of the base bundle once ``mutate`` has changed it, in order."""
    bundle = copy.deepcopy(BASE)
    mutate(bundle)
    return [(e.field, e.message) for e in process_bundle(bundle).errors]
