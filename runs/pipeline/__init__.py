"""The worker's side of a run: claim a case, build its context once, run its attempt (native or
hosted), finish and score it, and move its lane and run forward (docs/runs.md, "The pipeline").

Above ``runs.services`` in no way: services (run start, cancel, the reaper) call into the
pipeline, never the reverse (scripts/import_graph.py).
"""

from __future__ import annotations

from runs.pipeline.advance import case_run_finalize, lane_advance, lane_dispatch, run_advance
from runs.pipeline.execute import case_run_execute
from runs.pipeline.rounds import run_round_advance

__all__ = ["case_run_execute", "case_run_finalize", "lane_advance", "lane_dispatch", "run_advance", "run_round_advance"]
