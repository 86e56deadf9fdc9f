"""A case's verdict (runtime.md §5): what it is scored on, its score, its ``scoring.*`` events, its save.

The one way every path scores a case: :func:`case_scoring` computes the verdict in memory from
the case's evidence and :func:`case_scoring_save` persists it (the worker's finish, the finalize
job, the reaper's re-score, the n-wise judges' re-score). Each is idempotent and never raises: a
failure is a verdict without a document and with a ``scoring.failed`` event. The engine
(``engine.scoring``) does the maths; this module builds what it reads from the database (the
evidence, spec runtime.md §5.2; the workspace's price overrides, docs/scoring.md "Cost") and
records what happened (``scoring.*`` events with deterministic ids, appended once each, never
fatal to a score).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, cast

from django.db import transaction
from django.utils import timezone

from engine.events import SCORING_COMPLETED, SCORING_FAILED, SCORING_FAMILY, SCORING_METRIC_RECORDED, SCORING_STARTED
from engine.scoring import CaseEvidence, score_case
from engine.scoring.documents import CaseScoreDocument, JudgeResult
from engine.scoring.pricing import FREE_PROVIDERS
from engine.scoring.refusal import REFUSAL_JUDGE
from engine.scoring.security import SecurityPolicy
from engine.scoring.spec import EvaluationSpec, ModelPrice
from engine.types import JSON, Event, JSONObject
from infrastructure.selectors import model_price_rows
from packs.manifests import pack_manifest
from runs.adapters.statements import RowUpsert
from runs.events import payload_hydrate, run_events_append
from runs.models import CaseRun, Lane, Run, RunEvent, ScoreStatus
from scoring.judges import judge_for_run, secret_values_for_run
from scoring.models import CaseScore

logger = logging.getLogger(__name__)


def evaluation_spec_for(run: Run, checksum: str | None = None) -> EvaluationSpec:
    """The version's evaluation spec, from the manifest cache; ``checksum`` spares loading the version."""
    if checksum is None and Run.pack_version.is_cached(run):
        checksum = run.pack_version.manifest_checksum
    return pack_manifest(pack_version_id=run.pack_version_id, checksum=checksum).evaluation_spec


def security_policy_for(run: Run, checksum: str | None = None) -> SecurityPolicy | None:
    """The pack's security policy when it is a security pack (docs/security-evaluation.md)."""
    if checksum is None and Run.pack_version.is_cached(run):
        checksum = run.pack_version.manifest_checksum
    return SecurityPolicy.from_manifest(pack_manifest(pack_version_id=run.pack_version_id, checksum=checksum).manifest)


def has_refusal_judge(run: Run, security: SecurityPolicy | None) -> bool:
    """Whether the run's refusal judge slot has a deployment and the pack has prompts it could settle."""
    snapshot = run.judge_snapshot if isinstance(run.judge_snapshot, dict) else {}
    prompts = security.adversarial_prompts if security is not None else ()
    return isinstance(snapshot.get(REFUSAL_JUDGE), dict) and any(p.refusal_pattern for p in prompts)


# -- services -------------------------------------------------------------------------------


CASE_RUN_FIELDS = ("run__pack_version__manifest",)


def _scorable(case_run_id: int, case_run: CaseRun | None) -> CaseRun | None:
    """The finished case run to score (read unless given), or None when it is gone or still open."""
    if case_run is None:
        case_run = (
            CaseRun.objects.select_related("run__pack_version", "run__workspace", "lane", "case")
            .defer(*CASE_RUN_FIELDS)
            .filter(pk=case_run_id)
            .first()
        )
    if case_run is None:
        logger.info("case_run_score: case run %s is gone", case_run_id)
        return None
    if not case_run.is_terminal:
        logger.info("case_run_score: case run %s is not finished (%s)", case_run_id, case_run.status)
        return None
    return case_run


_CASE_SCORE_UPSERT = RowUpsert(CaseScore, unique="case_run", update=("lane", "passed", "overall_score", "validity", "document"))


@dataclasses.dataclass(frozen=True)
class CaseScoring:
    """A case's verdict computed in memory (:func:`case_scoring`), to be saved by :func:`case_scoring_save`.

    ``document`` is None when scoring failed; ``events`` are the ``scoring.*`` events to record
    either way; ``fields`` are the case row's score fields.
    """

    document: CaseScoreDocument | None
    events: list[Event]
    fields: dict[str, Any] = dataclasses.field(init=False)  # the case row's model fields

    def __post_init__(self) -> None:
        if self.document is None:
            fields: dict[str, Any] = {"score_status": ScoreStatus.ERRORED}
        else:
            fields = {"score_status": ScoreStatus.SCORED, "passed": self.document["passed"], "score": self.document["overall_score"]}
        object.__setattr__(self, "fields", fields)


def case_scoring(
    case_run: CaseRun,
    *,
    spec: EvaluationSpec,
    security: SecurityPolicy | None,
    events: list[JSONObject] | None = None,
    judge_results: dict[str, JudgeResult] | None = None,
    judges: bool = True,
) -> CaseScoring | None:
    """Score one finished case from its evidence, in memory: the one way every path scores a case.

    ``case_run`` holds its final fields (saved or about to be) and is loaded with ``run``, ``lane``
    and ``case``; ``events`` are its final attempt's engine events as the worker's sink kept them
    (``runs.events.RunEventSink.evidence``; None: read them);
    ``judge_results`` reuse judges' stored results (n_wise re-scoring). ``judges=False`` (the worker
    scoring with the case's finish) returns None for a spec with LLM judges or a run with a refusal
    judge: a judge call is slow and may fail on its own, so such a case is scored after its finish.
    Never raises.
    """
    if not judges and (spec.get("llm_judges") or has_refusal_judge(case_run.run, security)):
        return None
    return _case_scoring(case_run, spec=spec, security=security, events=events, judge_results=judge_results)


def _case_scoring(
    case_run: CaseRun,
    *,
    spec: EvaluationSpec,
    security: SecurityPolicy | None,
    events: list[JSONObject] | None,
    judge_results: dict[str, JudgeResult] | None,
) -> CaseScoring:
    prefix = f"scoring:{case_run.lane_id}:case:{case_run.pk}"
    started = None
    try:
        payload: JSONObject = {"evaluation_spec": spec.get("name"), "scope": "case"}
        started = scoring_event(case_run=case_run, event_id=f"{prefix}:started", event_type=SCORING_STARTED, payload=payload)
        evidence = evidence_for_case_run(case_run, events=events)
        needs_judge = bool(spec.get("llm_judges")) or has_refusal_judge(case_run.run, security)
        document = score_case(
            spec,
            evidence,
            judge=judge_for_run(case_run.run) if needs_judge else None,
            secret_values=secret_values_for_run(case_run.run) if needs_judge else (),
            judge_results=judge_results,
            fallback_pricing=workspace_prices_for(case_run),
            security=security,
        ).as_dict()
    except Exception as exc:
        logger.exception("Scoring case run %s failed", case_run.pk)
        failed = scoring_event(
            case_run=case_run,
            event_id=f"{prefix}:failed",
            event_type=SCORING_FAILED,
            payload={"error": f"{type(exc).__name__}: {exc}"[:500]},
        )
        return CaseScoring(document=None, events=[e for e in (started, failed) if e is not None])
    return CaseScoring(
        document=document, events=[started, *case_scored_events(case_run=case_run, prefix=prefix, spec=spec, document=document)]
    )


def case_scoring_save(case_run: CaseRun, scoring: CaseScoring, *, in_finish: bool = False) -> None:
    """Persist a case's scoring: its CaseScore, the case row's score fields and the ``scoring.*`` events.

    The one persist of every path. ``in_finish``: inside the case's finish transaction
    (runs/pipeline/execute.py), which writes the row's score fields with the finish (one ``UPDATE``)
    and the events with the case's last batch; only the CaseScore is written here.
    """
    if in_finish:
        _case_score_write(case_run, scoring)
        return
    fields = scoring.fields
    with transaction.atomic():
        _case_score_write(case_run, scoring)
        CaseRun.objects.filter(pk=case_run.pk).update(**fields)
        scoring_events_record(lane=case_run.lane, case_run=case_run, events=scoring.events)
    for name, value in fields.items():
        setattr(case_run, name, value)


def _case_score_write(case_run: CaseRun, scoring: CaseScoring) -> None:
    document = scoring.document
    if document is None:
        return
    # One upsert instead of update_or_create's savepoints, select and insert (its SQL built once).
    score = CaseScore(
        case_run=case_run,
        lane=case_run.lane,
        passed=document["passed"],
        overall_score=document["overall_score"],
        validity=document["validity"],
        document=document,
    )
    _CASE_SCORE_UPSERT(score)


def case_run_score(
    *,
    case_run_id: int,
    case_run: CaseRun | None = None,
    events: list[JSONObject] | None = None,
    judge_results: dict[str, JudgeResult] | None = None,
    spec: EvaluationSpec | None = None,
    security: SecurityPolicy | None = None,
) -> bool:
    """Score one finished case run and save it (:func:`case_scoring` then :func:`case_scoring_save`).

    Idempotent; never raises. Returns True when the case is scored. ``case_run`` (loaded with
    ``run__pack_version``, ``run__workspace``, ``lane`` and ``case``), ``events``, and the pack's
    ``spec`` and ``security`` policy (a worker's case context has them) spare the reads.
    """
    case_run = _scorable(case_run_id, case_run)
    if case_run is None:
        return False
    try:
        if spec is None:
            spec, security = evaluation_spec_for(case_run.run), security_policy_for(case_run.run)
        scoring = _case_scoring(case_run, spec=spec, security=security, events=events, judge_results=judge_results)
    except Exception as exc:  # the manifest could not be read
        logger.exception("Scoring case run %s failed", case_run_id)
        failed = scoring_event(
            case_run=case_run,
            event_id=f"scoring:{case_run.lane_id}:case:{case_run.pk}:failed",
            event_type=SCORING_FAILED,
            payload={"error": f"{type(exc).__name__}: {exc}"[:500]},
        )
        scoring = CaseScoring(document=None, events=[failed])
    case_scoring_save(case_run, scoring)
    return scoring.document is not None


# -- what a case is scored on ------------------------------------------------------------------


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


def workspace_prices_for(case_run: CaseRun) -> list[ModelPrice]:
    """The prices scoring uses beyond the pack's own rows: the workspace's overrides, as the
    engine's plain ``pricing.models`` rows (the price library is the engine's own last resort).
    A lane on a free provider (the offline ``scripted`` one) costs exactly 0: no read."""
    if case_run.lane.provider_key in FREE_PROVIDERS:
        return []
    # ``ModelPrice.as_pricing_row`` builds ``pricing.models`` rows (infrastructure/models.py).
    return cast(list[ModelPrice], model_price_rows(workspace_id=case_run.run.workspace_id))


# -- ``scoring.*`` events ----------------------------------------------------------------------


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
