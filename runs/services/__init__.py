"""Writes for runs (STYLE.md §4). One module per concern; import from here."""

from __future__ import annotations

from runs.events import RunEventSink, payload_hydrate, run_events_append
from runs.services.artifacts import event_export_lines, run_artifact_attach, run_exports_store
from runs.services.create import RunCreateError, deployment_snapshot, run_create
from runs.services.orchestrate import (
    RunNotCancellable,
    case_run_finalize,
    lane_advance,
    lane_dispatch_next,
    run_advance,
    run_cancel,
    run_reap,
    run_start,
)

__all__ = [
    "RunCreateError",
    "RunEventSink",
    "RunNotCancellable",
    "case_run_finalize",
    "deployment_snapshot",
    "event_export_lines",
    "lane_advance",
    "lane_dispatch_next",
    "payload_hydrate",
    "run_advance",
    "run_artifact_attach",
    "run_cancel",
    "run_create",
    "run_events_append",
    "run_exports_store",
    "run_reap",
    "run_start",
]
