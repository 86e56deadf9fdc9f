"""The scoring evidence of a finished case, read from the database (spec runtime.md §5.2)."""

from __future__ import annotations

from typing import TypedDict, cast

from engine.events import SCORING_FAMILY
from engine.scoring import CaseEvidence
from engine.scoring.tiers import BLACK_BOX, NATIVE, TIER_LABELS, TIER_NAMES, lane_tier
from engine.types import JSON, JSONObject
from infrastructure.models import ExecutionTarget
from runs.events import payload_hydrate
from runs.models import CaseRun, Lane, RunEvent


class EvidenceTier(TypedDict):
    """How observable a lane is (engine/scoring/tiers.py): the tier, its name and its label."""

    tier: str
    name: str
    label: str


def _case_document(case_payload: JSON) -> JSONObject:
    """Case.payload is the publish row (``{case_key, payload, inputs, expectations, …}``), a
    ``schema_version: 1`` document, or (older rows) the plain payload."""
    payload = case_payload if isinstance(case_payload, dict) else {}
    if payload.get("schema_version") == 1 or ("case_key" in payload and "payload" in payload):
        inner = payload.get("payload")
        return {
            "payload": inner if isinstance(inner, dict) else {},
            "inputs": payload.get("inputs") or [],
            "expectations": payload.get("expectations") or [],
        }
    return {"payload": payload, "inputs": payload.get("inputs") or [], "expectations": payload.get("expectations") or []}


def _case_artifacts(case_payload: JSON) -> dict[str, JSONObject]:
    items = case_payload.get("artifacts") if isinstance(case_payload, dict) else None
    return {str(a["key"]): a for a in (items if isinstance(items, list) else []) if isinstance(a, dict) and a.get("key")}


def _lane_model(lane: Lane) -> dict[str, str] | None:
    model = lane.model_name
    return {"provider_key": lane.provider_key, "provider_model_id": model} if model else None


def _verification(case_run: CaseRun) -> tuple[dict[str, JSONObject], dict[str, list[JSON]], dict[str, JSONObject]]:
    """The captured files, directory listings and code executions the case's verification recorded."""
    data: JSONObject = case_run.verification if isinstance(case_run.verification, dict) else {}

    def part(*names: str) -> JSONObject:
        for name in names:
            value = data.get(name)
            if isinstance(value, dict):
                return value
        return {}

    # The pipeline records each in the shape of its CaseEvidence field; the engine reads their values defensively.
    return (
        cast(dict[str, JSONObject], part("captured_files", "files")),
        cast(dict[str, list[JSON]], part("directory_listings", "listings")),
        cast(dict[str, JSONObject], part("code_executions", "code")),
    )


def _stored_events(case_run: CaseRun, *, superseded: bool = False) -> list[JSONObject]:
    """The case's engine events of its final attempt (only that attempt is the agent's record), or
    with ``superseded`` those of the attempts a retry replaced.

    A superseded attempt (a provider outage, a sandbox error the retry fixed) stays in the replay
    and is not scored: its ``system.run.failed`` is the harness's, not the agent's. Its events still
    reach the security verdict (``CaseEvidence.superseded_events``).
    """
    attempts = {"attempt__lt": case_run.attempt} if superseded else {"attempt": case_run.attempt}
    rows = (
        RunEvent.objects.filter(case_run=case_run, **attempts)
        .exclude(event_type__startswith=SCORING_FAMILY)
        .order_by("sequence_number")
        .values_list("event_id", "event_type", "sequence_number", "occurred_at", "payload")
    )
    return [
        {
            "event_id": event_id,
            "event_type": event_type,
            "sequence_number": sequence,
            "occurred_at": occurred_at.isoformat() if occurred_at else None,
            "payload": payload,
        }
        for event_id, event_type, sequence, occurred_at, payload in rows
    ]


def _hydrated(events: list[JSONObject]) -> list[JSONObject]:
    return [{**e, "payload": payload_hydrate(e["payload"])} for e in events if not str(e["event_type"]).startswith(SCORING_FAMILY)]


def evidence_for_case_run(case_run: CaseRun, events: list[JSONObject] | None = None) -> CaseEvidence:
    """The scoring evidence of a case run; ``events`` skips reading them back: its final attempt's
    engine events as the worker's sink kept them (``runs.events.RunEventSink.evidence``: in order,
    payloads whole, no ``scoring.*`` event)."""
    if events is None:
        events = _hydrated(_stored_events(case_run))
    superseded = _hydrated(_stored_events(case_run, superseded=True)) if case_run.attempt > 1 else []
    captured, listings, code = _verification(case_run)
    status = case_run.status if case_run.status in ("completed", "failed", "cancelled") else "failed"
    return CaseEvidence(
        case_key=case_run.case_key,
        status=status,
        stop_reason=case_run.stop_reason or None,
        final_output=case_run.final_output,
        events=events,
        superseded_events=superseded,
        captured_files=captured,
        directory_listings=listings,
        code_executions=code,
        case=_case_document(case_run.case_payload),
        usage={"input_tokens": case_run.input_tokens, "output_tokens": case_run.output_tokens, "total_tokens": case_run.total_tokens},
        step_count=case_run.step_count,
        tool_call_count=case_run.tool_call_count,
        duration_ms=float(case_run.duration_ms) if case_run.duration_ms is not None else None,
        model=_lane_model(case_run.lane),
        artifacts=_case_artifacts(case_run.case_payload),
        evidence_tier=_evidence_tier(case_run),
    )


def _evidence_tier(case_run: CaseRun) -> str:
    """What scoring may expect to see (engine/scoring/tiers.py); hosted cases record theirs."""
    data = case_run.verification if isinstance(case_run.verification, dict) else {}
    return str(data.get("evidence_tier") or "native")


def lane_evidence_tiers(lanes: list[Lane]) -> dict[int, EvidenceTier]:
    """``{lane_id: {"tier", "name", "label"}}``: native lanes are ``native``; a hosted lane is as observable
    as its least observed finished case (``black_box`` until one has finished). One query."""
    hosted = [lane.pk for lane in lanes if lane.runtime_profile_snapshot.get("execution_target") == ExecutionTarget.HOSTED_EXTERNAL]
    seen: dict[int, list[str]] = {pk: [] for pk in hosted}
    if hosted:
        rows = CaseRun.objects.filter(lane_id__in=hosted).values_list("lane_id", "verification__evidence_tier")
        for lane_id, tier in rows:
            if isinstance(tier, str):
                seen[lane_id].append(tier)
    tiers = {lane.pk: (lane_tier(seen[lane.pk]) if seen.get(lane.pk) else BLACK_BOX) if lane.pk in seen else NATIVE for lane in lanes}
    return {pk: {"tier": tier, "name": TIER_NAMES[tier], "label": TIER_LABELS[tier]} for pk, tier in tiers.items()}
