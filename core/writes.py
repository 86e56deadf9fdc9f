"""Inserts that a concurrent identical request cannot turn into a 500.

A service checks for a duplicate before it inserts, but two requests can both pass the check;
the database's unique constraint then refuses the second insert. :func:`insert_or_conflict` runs
the insert in a savepoint, so the refused insert leaves the caller's transaction usable, and
turns the refusal into a 409 :class:`~core.errors.Conflict` naming the field (or lets the caller
return the row that won, for endpoints meant to be repeat-safe: :func:`insert_or_none`).
"""

from __future__ import annotations

from django.db import IntegrityError, models, transaction

from core.errors import Conflict


def insert_or_none(obj: models.Model) -> models.Model | None:
    """Insert ``obj``; None when a unique constraint refused it (a concurrent request won)."""
    try:
        with transaction.atomic():
            obj.save(force_insert=True)
    except IntegrityError:
        return None
    return obj


def insert_or_conflict(obj: models.Model, *, field: str, message: str) -> None:
    """Insert ``obj``, or raise a 409 about ``field`` when a concurrent request saved its twin first."""
    if insert_or_none(obj) is None:
        raise Conflict(message, field=field, code="conflict")
