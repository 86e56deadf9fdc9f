"""Who did it: the user behind a request, or None for anonymous callers and system tasks."""

from __future__ import annotations

from typing import Any


def actor_or_none(actor: Any) -> Any:
    """``actor`` when it is an authenticated user; None otherwise (a FK that may be NULL)."""
    return actor if getattr(actor, "is_authenticated", False) else None
