"""The adapters' version guards: a library version their internals were not checked against takes
the public path (docs/performance.md, "Fast paths behind adapters"), and the checked versions take
the fast one — so an upgrade that silently turned a fast path off fails here, not in production's
CPU bill."""

from __future__ import annotations

import django
import psycopg
import pytest

from runs.adapters import statements


@pytest.mark.parametrize(
    ("version", "supported"),
    [
        ((5, 2, 19, "final", 0), True),
        ((5, 0, 0, "final", 0), True),
        ((6, 0, 0, "final", 0), False),
        ((4, 2, 0, "final", 0), False),
        ((), False),
    ],
)
def test_only_a_checked_django_major_takes_the_fast_paths(version, supported):
    assert statements.django_supported(version) is supported


@pytest.mark.parametrize(
    ("version", "supported"), [("3.3.9", True), ("3.1", True), ("4.0.0", False), ("2.9.10", False), (None, False), ("dev", False)]
)
def test_only_a_checked_psycopg_major_binds_on_the_server(version, supported):
    assert statements.psycopg_supported(version) is supported


def test_the_installed_versions_take_the_fast_paths():
    assert statements.FAST, (
        f"Django {django.__version__}: the statement fast paths are off. Check runs/adapters/statements.py's "
        f"internals against it (its conformance tests: runs/tests/test_adapter_statements.py), then add its major to DJANGO_MAJORS."
    )
    assert statements._server_binding(), f"psycopg {psycopg.__version__}: server-side binding is off (PSYCOPG_MAJORS)"


@pytest.mark.django_db
@pytest.mark.both_databases
def test_an_unknown_django_major_takes_the_public_paths(monkeypatch):
    from django.db import connection

    monkeypatch.setattr(statements, "FAST", statements.django_supported((6, 0, 0, "final", 0)))
    with statements.prepared_cursor() as cursor:
        assert type(cursor.cursor) is type(connection.cursor().cursor)  # the connection's own cursor class
