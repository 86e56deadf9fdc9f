"""Database helpers that are not one app's business."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Reads that see one moment of the database, for a page whose regions must agree.

    SQLite (WAL) gives a transaction one snapshot from its first read on; PostgreSQL's default,
    READ COMMITTED, gives each statement its own, so an outermost transaction asks for
    REPEATABLE READ (allowed as its first statement). Nested in an outer transaction (tests), it
    reads what that transaction sees.
    """
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield
