"""``scoring.*`` events: built with deterministic ids, appended once each, never fatal to a score."""

from __future__ import annotations

import logging

from django.utils import timezone

from engine.events import SCORING_COMPLETED, SCORING_METRIC_RECORDED
from engine.scoring.documents import CaseScoreDocument
from engine.scoring.spec import EvaluationSpec
from engine.types import JSON, Event, JSONObject
from runs.events import run_events_append
from runs.models import CaseRun, Lane

logger = logging.getLogger(__name__)

EVENT_SOURCE = "worker_scoring"


def scoring_event(*, event_id: str, event_type: str, payload: dict[str, JSON], case_run: CaseRun | None = None) -> Event:
    if case_run is not None:
        payload = {**payload, "case_key": case_run.case_key}
    return Event(
        event_id=event_id,
        event_type=event_type,
        source=EVENT_SOURCE,
        occurred_at=timezone.now().isoformat(),
        payload=payload,
        case_key=case_run.case_key if case_run else "",
    )


def scoring_events_append(*, lane: Lane, events: list[Event], case_run: CaseRun | None = None) -> int:
    """Append ``scoring.*`` events once each (deterministic ids), in one batch; returns how many were new.

    Goes through the runs event writer, which skips known ids and allocates the lane's next
    sequence numbers in one step, so scoring events interleave correctly with the engine's.
    """
    return run_events_append(
        run_id=lane.run_id,
        lane_id=lane.pk,
        case_run_id=case_run.pk if case_run else None,
        attempt=case_run.attempt if case_run else 0,
        events=events,
    )


def scoring_event_append(*, lane: Lane, event_id: str, event_type: str, payload: dict[str, JSON], case_run: CaseRun | None = None) -> bool:
    """Append one ``scoring.*`` event once (deterministic id); False when it already existed."""
    event = scoring_event(event_id=event_id, event_type=event_type, payload=payload, case_run=case_run)
    return scoring_events_append(lane=lane, events=[event], case_run=case_run) == 1


def scoring_events_record(*, lane: Lane, events: list[Event], case_run: CaseRun | None = None) -> None:
    """Append, logging instead of raising: event failures only add a warning (§5.1), never change a score."""
    try:
        scoring_events_append(lane=lane, events=events, case_run=case_run)
    except Exception:
        logger.exception("Could not write scoring events %s", [e.event_id for e in events])


def scoring_event_record(*, lane: Lane, event_id: str, event_type: str, payload: dict[str, JSON]) -> None:
    """One event, appended like :func:`scoring_events_record`."""
    scoring_events_record(lane=lane, events=[scoring_event(event_id=event_id, event_type=event_type, payload=payload)])


def case_scored_events(*, case_run: CaseRun, prefix: str, spec: EvaluationSpec, document: CaseScoreDocument) -> list[Event]:
    """One ``scoring.metric.recorded`` per metric, then ``scoring.completed`` with the verdict."""
    events = [
        scoring_event(
            case_run=case_run,
            event_id=f"{prefix}:metric:{metric.get('key')}",
            event_type=SCORING_METRIC_RECORDED,
            payload={"metric_key": metric.get("key"), "state": metric.get("state"), "value": metric.get("value")},
        )
        for metric in document.get("metric_details") or []
    ]
    completed: JSONObject = {
        "evaluation_spec": spec.get("name"),
        "status": document["status"],
        "validity": document["validity"],
        "validity_reason": document["validity_reason"],
        "passed": document["passed"],
        "overall_score": document["overall_score"],
        "dimension_scores": {k: v.get("score") for k, v in document["dimensions"].items()},
        "llm_judge_results": [
            {"judge_key": j.get("judge_key"), "normalized_score": j.get("normalized_score")}
            for j in document.get("llm_judge_details") or []
        ],
        "warnings": [*document["warnings"]],
    }
    events.append(scoring_event(case_run=case_run, event_id=f"{prefix}:completed", event_type=SCORING_COMPLETED, payload=completed))
    return events
