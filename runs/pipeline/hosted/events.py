"""The worker's side of a hosted case's events: who wrote them, and closing the case.

Kept apart from the callback (``callback.py``, loaded with the URLconf) so the worker's import
chain stays free of the web layer.
"""

from __future__ import annotations

from django.db import transaction

from engine.events import SYSTEM_RUN_COMPLETED, SYSTEM_RUN_FAILED
from engine.modes.case import STOP_AGENT_ERROR
from engine.types import Event
from runs.events import LaneRow, run_events_append
from runs.models import CaseRun, RunEvent

SOURCE_HOSTED = "hosted_agent"
__all__ = ["SOURCE_HOSTED", "STOP_AGENT_ERROR", "TERMINAL_EVENT_TYPES", "hosted_case_close", "terminal_recorded"]
TERMINAL_EVENT_TYPES = (SYSTEM_RUN_COMPLETED, SYSTEM_RUN_FAILED)


def terminal_recorded(case_run: CaseRun, attempt: int) -> bool:
    """Whether the attempt has its terminal event (the agent's, or the worker's deadline/cancel)."""
    return RunEvent.objects.filter(case_run=case_run, attempt=attempt, event_type__in=TERMINAL_EVENT_TYPES).exists()


@transaction.atomic
def hosted_case_close(*, case_run: CaseRun, attempt: int, event: Event) -> bool:
    """The worker's side: record its own terminal event (deadline, dispatch failure) unless the
    agent's terminal event got there first. True when this call closed the case."""
    LaneRow(case_run.lane_id).lock()
    if terminal_recorded(case_run, attempt):
        return False
    run_events_append(run_id=case_run.run_id, lane_id=case_run.lane_id, case_run_id=case_run.pk, attempt=attempt, events=[event])
    return True
