"""Compatibility names: the statement fast paths live in :mod:`runs.adapters.statements` now.

``runs.lifecycle``, ``runs.lanes``, ``runs.pipeline.lane`` and ``scoring.services`` import them
from here; new code imports ``runs.adapters.statements`` (the interface, the private internals it
uses, the versions it was checked against and its public fallback are documented there).
"""

from __future__ import annotations

from runs.adapters.statements import PrecompiledGet, RowUpdate, RowUpsert, prepared_cursor

__all__ = ["PrecompiledGet", "RowUpdate", "RowUpsert", "prepared_cursor"]
