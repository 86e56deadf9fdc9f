"""Writes for runs: create, start, cancel, reap, attach artifacts. One module per concern; import from here.

The worker's side of a case (claim, attempt, finish, scoring, lane and run completion) is the
pipeline: ``runs.pipeline``.
"""

from __future__ import annotations

from runs.services.artifacts import event_export_lines, run_artifact_attach, run_exports_store
from runs.services.create import RunCreateError, deployment_snapshot, run_create
from runs.services.orchestrate import RunNotCancellable, run_cancel, run_reap, run_redispatch, run_start
from runs.services.shares import run_share_create, run_share_revoke, run_share_viewed

__all__ = [
    "RunCreateError",
    "RunNotCancellable",
    "deployment_snapshot",
    "event_export_lines",
    "run_artifact_attach",
    "run_cancel",
    "run_create",
    "run_exports_store",
    "run_reap",
    "run_redispatch",
    "run_share_create",
    "run_share_revoke",
    "run_share_viewed",
    "run_start",
]
