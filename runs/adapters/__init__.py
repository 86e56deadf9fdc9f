"""Adapters: the only modules of the project that use private Django / Celery / psycopg internals.

Each adapter is a fast path kept because a measurement justified it (docs/performance.md, "Fast
paths behind adapters"), behind one narrow interface documented in its module. Each says which
library versions its internals were checked against, falls back to the plain public API on a
major version it does not know, and has a conformance test (``runs/tests/test_adapter_*.py``,
marked ``both_databases``: CI runs them on PostgreSQL and again on SQLite) that checks the fast
path does exactly what the public API does.

- :mod:`runs.adapters.statements`: the worker's hot statements (a ``get`` compiled once, single-row
  ``UPDATE`` and upsert without the ORM's per-call compile, server-side prepared statements).

Part of the runs record layer (``RUNS_RECORD`` in ``scripts/import_graph.py``): it imports only
Django and the libraries, never the project's apps.
"""
