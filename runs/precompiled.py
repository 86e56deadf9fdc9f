"""A hot ``get(pk=…)`` whose SQL is compiled once per process (the worker's claim, docs/performance.md).

Compiling a queryset with ``select_related`` and annotations costs more CPU than the query
itself: the worker's claim read (a case run with its run, lane and case, two annotations)
spent about 17 % of a case's Python time in the ORM's compiler. :class:`PrecompiledGet` builds
the queryset's SQL once per database connection settings, then per call only executes it with
the new primary key and hydrates the rows with Django's own code (converters, ``from_db``,
the ``select_related`` populators), so the objects are exactly what ``queryset.get()`` returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

_PLACEHOLDER = -7_130_417_263  # a primary key no row has; found again in the compiled parameters


def prepared_cursor(using: str = "default") -> Any:
    """A cursor of connection ``using`` for the worker's hot statements, which PostgreSQL can keep
    prepared: a Django cursor (errors mapped, statements logged and counted like any other) over
    a psycopg cursor that binds its parameters on the server. Django's own cursors bind on the
    client, so nothing is ever prepared, and parsing and planning were about a third of the
    PostgreSQL CPU of a case (most of it the claim's six-table join).

    psycopg prepares a statement once it ran ``prepare_threshold`` times on the connection. Django
    sets no threshold (prepared statements off, for connection poolers in transaction mode), so
    a deployment opts in: ``DATABASE_URL=postgres://…?prepare_threshold=5`` (docs/performance.md).
    Without it the statements run exactly as before, bound on the server. Elsewhere (SQLite) the
    connection's usual cursor.
    """
    connection = connections[using]
    if connection.vendor != "postgresql":
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:  # what connection.cursor() does, with this cursor class
        return connection._prepare_cursor(ServerBindingCursor(connection.connection))  # type: ignore[attr-defined,call-arg]


class PrecompiledGet:
    """``build().get(pk=pk)`` (or None when no row), with the SQL compiled once per connection alias."""

    def __init__(self, build: Callable[[], QuerySet[Any]]) -> None:
        self.build = build
        self.compiled: dict[str, _Compiled] = {}
        self.lock = threading.Lock()

    def _compile(self, alias: str) -> _Compiled:
        with self.lock:
            if alias not in self.compiled:
                self.compiled[alias] = _Compiled(self.build().filter(pk=_PLACEHOLDER), alias)
            return self.compiled[alias]

    def get(self, pk: int, *, using: str = "default", updated: tuple[str, list[Any]] | None = None) -> Model | None:
        """The row, or None. ``updated`` (PostgreSQL): an ``UPDATE`` of this model's table with its
        parameters, run first in the same statement; the row is then read as that statement
        leaves it, and only if it changed it (a compare-and-set and its read in one round trip)."""
        compiled = self.compiled.get(using) or self._compile(using)
        values = list(compiled.params)
        values[compiled.position] = pk
        sql = compiled.sql
        if updated is not None:
            # The CTE takes the table's name, so the query reads the rows it returned (as written).
            # Inside its own definition the name is still the table's (a WITH is not recursive).
            table = connections[using].ops.quote_name(compiled.model._meta.db_table)
            sql, values = f"WITH {table} AS ({updated[0]} RETURNING *) {sql}", [*updated[1], *values]
        with prepared_cursor(using) as cursor:
            cursor.execute(sql, values)
            rows = cursor.fetchall()
        return compiled.hydrate(rows[0]) if rows else None


class _Compiled:
    """One queryset's SQL, parameters and hydration plan (what ModelIterable works out per query)."""

    def __init__(self, queryset: QuerySet[Any], alias: str) -> None:
        self.alias = alias
        self.compiler = queryset.query.get_compiler(using=alias)
        sql, params = self.compiler.as_sql()  # also fills select, klass_info, annotation_col_map
        positions = [i for i, value in enumerate(params) if value == _PLACEHOLDER]
        if len(positions) != 1:  # pragma: no cover - a queryset this class cannot serve
            raise ValueError("the queryset must filter on its primary key exactly once")
        self.sql, self.params, self.position = sql, tuple(params), positions[0]
        select, klass_info = self.compiler.select, self.compiler.klass_info
        self.model = klass_info["model"]
        self.start, self.end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self.names = [column[0].target.attname for column in select[self.start : self.end]]
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


class RowUpdate:
    """``model.objects.filter(pk=pk, **where).update(**values)`` for plain values, without the ORM's per-call compile.

    The worker's hot single-row writes (the claim's compare-and-set, the case's finish) spent
    more CPU building the ``UPDATE`` through the ORM than the statement costs. The SQL is built
    once per set of column names (and database vendor); each value is converted by its field
    exactly as ``update()`` converts it (``get_db_prep_save`` for what is set, the field's
    ``get_db_prep_value`` for what is compared), so the row written is the same. ``increment``
    names integer columns set to themselves plus one. Returns the number of rows changed.
    """

    def __init__(self, model: type[Model]) -> None:
        self.model = model
        # (vendor, where names, value names, increment) → the SQL and the fields of its parameters
        self.sql: dict[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], tuple[str, list[Any], list[Any]]] = {}

    def __call__(
        self, pk: Any, *, where: dict[str, Any], values: dict[str, Any], increment: tuple[str, ...] = (), using: str = "default"
    ) -> int:
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

    def _build(
        self, key: tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], connection: Any
    ) -> tuple[str, list[Any], list[Any]]:
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
    without the ORM's per-call compile and without reading the row's id back.

    Each value is what ``bulk_create`` would write: the field's ``pre_save`` (``auto_now_add``
    included) converted by ``get_db_prep_save``.
    """

    def __init__(self, model: type[Model], *, unique: str, update: tuple[str, ...]) -> None:
        self.model, self.unique, self.update = model, unique, update
        self.fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        self.sql: dict[str, str] = {}

    def __call__(self, obj: Model, *, using: str = "default") -> None:
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
