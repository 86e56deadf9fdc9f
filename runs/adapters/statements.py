"""The worker's hot statements: compiled once, written without the ORM's per-call compile, prepared on the server.

The one home of the statement fast paths (docs/performance.md, "Fast paths behind adapters": on
PostgreSQL the public path costs a read case 1.6x the CPU in one process, 1.6x at the worker's
level). Four names make the interface; each does what its public equivalent does, with the
same rows read and written (``runs/tests/test_adapter_statements.py`` compares them on SQLite and
PostgreSQL):

- ``prepared_cursor(using="default")``: a Django cursor (a context manager; errors mapped,
  statements logged and counted like any other). On PostgreSQL its parameters are bound on the
  server, so psycopg prepares a statement once it ran ``prepare_threshold`` times on the
  connection (``DATABASE_PREPARE_THRESHOLD``). Public equivalent: ``connection.cursor()``.
- ``PrecompiledGet(build).get(pk, using=…, updated=None)``: ``build().get(pk=pk)``, or None when
  there is no row. ``updated``, an ``UPDATE`` of the model's table and its parameters (e.g. from
  :meth:`RowUpdate.statement`), runs first; the row is then read as it leaves it, and only if it
  changed it (a compare-and-set and its read; one statement on PostgreSQL, two elsewhere).
  Public equivalent: the ``UPDATE`` through ``connection.cursor()``, then
  ``build().filter(pk=pk).first()``.
- ``RowUpdate(model)(pk, where=…, values=…, increment=(), using=…)``: the number of rows changed
  by ``model.objects.filter(pk=pk, **where).update(**values, **{name: F(name) + 1 for name in
  increment})``; ``.statement(…)`` gives that ``UPDATE`` and its parameters without running it.
- ``RowUpsert(model, unique=…, update=…)(obj, using=…)``: ``model.objects.bulk_create([obj],
  update_conflicts=True, unique_fields=[unique], update_fields=update)`` for one row, without
  reading its id back (``obj.pk`` is not set).

Private internals, used here only: Django's SQL compiler (``Query.get_compiler``, ``as_sql``, the
compiler's ``select`` / ``klass_info`` / ``annotation_col_map`` / converters) and
``django.db.models.query.get_related_populators`` to hydrate a precompiled query's rows as
``QuerySet`` does; ``BaseDatabaseWrapper._prepare_cursor`` and Django's psycopg 3
``ServerBindingCursor`` for the prepared cursor. Checked against **Django 5.2.19 and psycopg
3.3.9** (PostgreSQL 15, SQLite 3.40). On a Django major version other than 5, or a psycopg major
other than 3, or when one of those internals is missing, every name falls back to its public
equivalent (``FAST`` is False; the server-side binding alone is off without psycopg 3): slower,
never wrong.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import django
from django.db import connections
from django.db.models import F, Model, QuerySet

CHECKED_AGAINST = {"django": "5.2.19", "psycopg": "3.3.9"}
DJANGO_MAJORS = frozenset({5})  # majors whose compiler and cursor internals this module knows
PSYCOPG_MAJORS = frozenset({3})


def django_supported(version: Sequence[Any] = django.VERSION) -> bool:
    """Whether Django ``version`` (``django.VERSION``) is one whose internals the fast paths were checked against."""
    if not version or version[0] not in DJANGO_MAJORS:
        return False
    try:
        from django.db.backends.base.base import BaseDatabaseWrapper
        from django.db.models.query import get_related_populators  # noqa: F401  # present: hydration works as checked
    except ImportError:  # pragma: no cover - a Django 5 without them
        return False
    return hasattr(BaseDatabaseWrapper, "_prepare_cursor")


def psycopg_supported(version: str | None) -> bool:
    """Whether psycopg ``version`` (``psycopg.__version__``; None: not installed) binds on the server as checked."""
    try:
        return version is not None and int(version.split(".")[0]) in PSYCOPG_MAJORS
    except ValueError:
        return False


FAST = django_supported()  # False: every name takes its public path (the tests switch it to compare both)


@functools.cache
def _server_binding() -> bool:
    """psycopg 3 under Django's psycopg 3 backend (not psycopg2), at a checked major version."""
    try:
        import psycopg
        from django.db.backends.postgresql.base import ServerBindingCursor  # noqa: F401
        from django.db.backends.postgresql.psycopg_any import is_psycopg3
    except ImportError:  # pragma: no cover - PostgreSQL through psycopg2
        return False
    return bool(is_psycopg3) and psycopg_supported(psycopg.__version__)


def prepared_cursor(using: str = "default") -> Any:
    """A cursor of connection ``using`` for a hot statement (see the module's docstring)."""
    connection = connections[using]
    if not (FAST and connection.vendor == "postgresql" and _server_binding()):
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    # What connection.cursor() does (BaseDatabaseWrapper._cursor), with this cursor class instead
    # of the connection's client-side binding one.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(ServerBindingCursor(connection.connection))  # type: ignore[attr-defined,call-arg]


class PrecompiledGet:
    """``build().get(pk=pk)`` (or None), its SQL compiled once per connection alias (see the module's docstring)."""

    def __init__(self, build: Callable[[], QuerySet[Any]]) -> None:
        self.build = build
        self.compiled: dict[str, _Compiled] = {}
        self.lock = threading.Lock()

    def get(self, pk: int, *, using: str = "default", updated: tuple[str, Sequence[Any]] | None = None) -> Model | None:
        if not FAST:
            return self._public_get(pk, using, updated)
        compiled = self.compiled.get(using) or self._compile(using)
        connection = connections[using]
        values = list(compiled.params)
        values[compiled.position] = pk
        sql = compiled.sql
        if updated is not None and connection.vendor == "postgresql":
            # The CTE takes the table's name, so the query reads the rows it returned (as written).
            # Inside its own definition the name is still the table's (a WITH is not recursive).
            table = connection.ops.quote_name(compiled.model._meta.db_table)
            sql, values = f"WITH {table} AS ({updated[0]} RETURNING *) {sql}", [*updated[1], *values]
        elif updated is not None:  # no data-modifying CTE (SQLite): the write, then the read
            with prepared_cursor(using) as cursor:
                cursor.execute(updated[0], list(updated[1]))
                if cursor.rowcount != 1:
                    return None
        with prepared_cursor(using) as cursor:
            cursor.execute(sql, values)
            rows = cursor.fetchall()
        return compiled.hydrate(rows[0]) if rows else None

    def _public_get(self, pk: int, using: str, updated: tuple[str, Sequence[Any]] | None) -> Model | None:
        if updated is not None:
            with connections[using].cursor() as cursor:
                cursor.execute(updated[0], list(updated[1]))
                if cursor.rowcount != 1:
                    return None
        return self.build().using(using).filter(pk=pk).first()

    def _compile(self, alias: str) -> _Compiled:
        with self.lock:
            if alias not in self.compiled:
                self.compiled[alias] = _Compiled(self.build, alias)
            return self.compiled[alias]


class _Compiled:
    """One queryset's SQL, parameters and hydration plan (what ``ModelIterable`` works out per query)."""

    def __init__(self, build: Callable[[], QuerySet[Any]], alias: str) -> None:
        self.alias = alias
        # Compiled for two primary keys: the one parameter that differs is the key's (no magic value
        # that a real parameter could equal).
        self.compiler = build().filter(pk=1).query.get_compiler(using=alias)
        sql, params = self.compiler.as_sql()  # also fills select, klass_info, annotation_col_map
        other_sql, other_params = build().filter(pk=2).query.get_compiler(using=alias).as_sql()
        positions = [i for i, (one, two) in enumerate(zip(params, other_params, strict=False)) if one != two]
        if other_sql != sql or len(params) != len(other_params) or len(positions) != 1:  # pragma: no cover
            raise ValueError("the queryset must filter on its primary key exactly once, and on nothing that varies")
        self.sql, self.params, self.position = sql, tuple(params), positions[0]
        select, klass_info = self.compiler.select, self.compiler.klass_info
        self.model = klass_info["model"]
        self.start, self.end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self.names = [column[0].target.attname for column in select[self.start : self.end]]
        from django.db.models.query import get_related_populators

        self.populators = get_related_populators(klass_info, select, alias)  # type: ignore[call-arg]  # stubs: a later Django
        self.annotations = list((self.compiler.annotation_col_map or {}).items())
        self.converters = self.compiler.get_converters([column[0] for column in select[: self.compiler.col_count]])

    def hydrate(self, raw: tuple[Any, ...]) -> Model:
        # What ModelIterable does for one row (django/db/models/query.py), minus the compile.
        row = next(iter(self.compiler.apply_converters([raw], self.converters))) if self.converters else raw
        obj = self.model.from_db(self.alias, self.names, row[self.start : self.end])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotations:
            setattr(obj, name, row[position])
        return obj


_UpdateKey = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


class RowUpdate:
    """``model.objects.filter(pk=pk, **where).update(**values)`` for plain values, its SQL built once per shape.

    Each value is converted by its field exactly as ``update()`` converts it (``get_db_prep_save``
    for what is set, ``get_db_prep_value`` for what is compared), so the row written is the same.
    ``increment`` names integer columns set to themselves plus one. Returns the rows changed.
    """

    def __init__(self, model: type[Model]) -> None:
        self.model = model
        # (vendor, where names, value names, increment) → the SQL and the fields of its parameters
        self.sql: dict[_UpdateKey, tuple[str, list[Any], list[Any]]] = {}

    def __call__(
        self, pk: Any, *, where: dict[str, Any], values: dict[str, Any], increment: tuple[str, ...] = (), using: str = "default"
    ) -> int:
        if not FAST:
            changes = {**values, **{name: F(name) + 1 for name in increment}}
            return self.model._default_manager.using(using).filter(pk=pk, **where).update(**changes)
        sql, params = self.statement(pk, where=where, values=values, increment=increment, using=using)
        with prepared_cursor(using) as cursor:
            cursor.execute(sql, params)
            return int(cursor.rowcount)

    def statement(
        self, pk: Any, *, where: dict[str, Any], values: dict[str, Any], increment: tuple[str, ...] = (), using: str = "default"
    ) -> tuple[str, list[Any]]:
        """The ``UPDATE`` and its parameters, not run (e.g. for :meth:`PrecompiledGet.get`'s ``updated``)."""
        connection = connections[using]
        key = (connection.vendor, tuple(where), tuple(values), increment)
        sql, set_fields, where_fields = self.sql.get(key) or self._build(key, connection)
        params = [field.get_db_prep_save(value, connection=connection) for field, value in zip(set_fields, values.values(), strict=True)]
        params += [field.get_db_prep_value(value, connection) for field, value in zip(where_fields, [pk, *where.values()], strict=True)]
        return sql, params

    def _build(self, key: _UpdateKey, connection: Any) -> tuple[str, list[Any], list[Any]]:
        _, where, values, increment = key
        meta, quote = self.model._meta, connection.ops.quote_name
        set_fields = [meta.get_field(name) for name in values]
        where_fields = [meta.pk, *(meta.get_field(name) for name in where)]
        added = [meta.get_field(name) for name in increment]
        if any(
            hasattr(field, "get_placeholder") or not field.concrete for field in (*set_fields, *where_fields, *added)
        ):  # pragma: no cover
            raise ValueError(f"{self.model.__name__}: a field RowUpdate cannot write")
        sets = [f"{quote(field.column)} = %s" for field in set_fields]  # type: ignore[union-attr]
        sets += [f"{quote(field.column)} = {quote(field.column)} + 1" for field in added]  # type: ignore[union-attr]
        tests = [f"{quote(field.column)} = %s" for field in where_fields]  # type: ignore[union-attr]
        sql = f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} WHERE {' AND '.join(tests)}"
        self.sql[key] = (sql, set_fields, where_fields)
        return self.sql[key]


class RowUpsert:
    """``bulk_create([obj], update_conflicts=True, unique_fields=[unique], update_fields=update)`` for one row,
    its SQL built once per vendor, without reading the row's id back.

    Each value is what ``bulk_create`` would write: the field's ``pre_save`` (``auto_now_add``
    included) converted by ``get_db_prep_save``.
    """

    def __init__(self, model: type[Model], *, unique: str, update: tuple[str, ...]) -> None:
        self.model, self.unique, self.update = model, unique, update
        self.fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self.sql: dict[str, str] = {}

    def __call__(self, obj: Model, *, using: str = "default") -> None:
        if not FAST:
            manager = self.model._default_manager.using(using)
            manager.bulk_create([obj], update_conflicts=True, unique_fields=[self.unique], update_fields=list(self.update))
            return
        connection = connections[using]
        sql = self.sql.get(connection.vendor) or self._build(connection)
        params = [field.get_db_prep_save(field.pre_save(obj, True), connection=connection) for field in self.fields]
        with prepared_cursor(using) as cursor:
            cursor.execute(sql, params)

    def _build(self, connection: Any) -> str:
        meta, quote = self.model._meta, connection.ops.quote_name
        if any(hasattr(field, "get_placeholder") for field in self.fields):  # pragma: no cover - not for these
            raise ValueError(f"{self.model.__name__}: a field RowUpsert cannot write")
        columns = ", ".join(quote(field.column) for field in self.fields)
        updates = ", ".join(
            f"{quote(column)} = EXCLUDED.{quote(column)}"
            for column in (meta.get_field(name).column for name in self.update)  # type: ignore[union-attr]
        )
        conflict = quote(meta.get_field(self.unique).column)  # type: ignore[union-attr]
        placeholders = ", ".join(["%s"] * len(self.fields))
        sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders}) ON CONFLICT({conflict}) DO UPDATE SET {updates}"
        self.sql[connection.vendor] = sql
        return sql
