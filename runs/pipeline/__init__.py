"""The worker's side of a run: claim a case, run its attempt (native or hosted), finish and score it.

Above ``runs.services`` and ``runs.hosted`` (scripts/import_graph.py): the pipeline drives them,
they never call back into it.
"""

from __future__ import annotations

from runs.pipeline.execute import case_run_execute

__all__ = ["case_run_execute"]
