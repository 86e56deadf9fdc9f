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

    def get(self, pk: int, *, using: str = "default") -> Model | None:
        compiled = self.compiled.get(using) or self._compile(using)
        values = list(compiled.params)
        values[compiled.position] = pk
        with connections[using].cursor() as cursor:
            cursor.execute(compiled.sql, values)
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
