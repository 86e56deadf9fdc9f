"""Redaction of secret values, for anything that leaves a run. The one implementation is ``engine.redact``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.redact import REDACTED, Redactor

__all__ = ["REDACTED", "Redactor", "redact", "redactor_for_workspace"]


def redact(value: Any, secret_values: Iterable[str]) -> Any:
    """Redact a string or a JSON-like value."""
    redactor = Redactor(secret_values)
    return redactor.text(value) if isinstance(value, str) else redactor.json(value)


def redactor_for_workspace(*, workspace: Any) -> Redactor:
    from secrets_app.services import secrets_resolve_for_run

    return Redactor(secrets_resolve_for_run(workspace=workspace).values())
