"""Shared helpers for the validation modules: an error sink and small predicates."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import re2

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


class Report:
    """Accumulates ``(field, message)`` pairs in validation order."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, message: str) -> None:
        self.items.append((field, message))


def blank(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip()


def re2_error(pattern: str) -> str | None:
    """RE2 compile error text (Go's wording), or None when the pattern compiles."""
    try:
        re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else "invalid"
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        return f"error parsing regexp: {detail}"
    except Exception as exc:  # noqa: BLE001 - any compiler failure is an invalid pattern
        return f"error parsing regexp: {exc}"
    return None


def is_cidr(value: str) -> bool:
    if "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


ENV_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
