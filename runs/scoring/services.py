"""Scoring services: case → lane → run scorecards (runtime.md §5), called by the run lifecycle.

Each function is idempotent and never raises: a failure marks the row ``errored`` and emits a
``scoring.failed`` event. The engine (``engine.scoring``) does the maths; this module builds the
evidence from the database and persists what comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from engine.scoring import CaseEvidence, aggregate_lane, rank_lanes, score_case
from runs.models import CaseRun, CaseScore, Lane, LaneScorecard, Run, RunEvent, RunScorecard, ScoreStatus

logger = logging.getLogger(__name__)

JSON = Any
EVENT_SOURCE = "worker_scoring"


# -- evidence -------------------------------------------------------------------------------


# Pack versions are immutable: a worker keeps each version's evaluation spec in memory, keyed by
# checksum too (a primary key can come back after a database is recreated).
_specs: dict[tuple[int, str], dict[str, JSON]] = {}


def evaluation_spec_for(run: Run, checksum: str | None = None) -> dict[str, JSON]:
    """The version's evaluation spec; ``checksum`` (its manifest checksum) spares loading the version."""
    from packs.models import PackVersion

    if checksum is None:
        checksum = run.pack_version.manifest_checksum
    key = (run.pack_version_id, checksum)
    spec = _specs.get(key)
    if spec is None:
        manifest = PackVersion.objects.filter(pk=run.pack_version_id).values_list("manifest", flat=True).first()
        manifest = manifest if isinstance(manifest, dict) else {}
        spec = manifest.get("evaluation_spec")
        spec = spec if isinstance(spec, dict) else {}
        if len(_specs) > 32:
            _specs.clear()
        _specs[key] = spec
    return spec


def _hydrate(payload: JSON) -> JSON:
    """Replace an oversized-payload stub ``{"$ref", "bytes", "type"}`` by the stored payload."""
    from runs.services.events import payload_hydrate

    return payload_hydrate(payload)


def _case_document(case_payload: JSON) -> dict[str, JSON]:
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


def _case_artifacts(case_payload: JSON) -> dict[str, dict[str, JSON]]:
    items = case_payload.get("artifacts") if isinstance(case_payload, dict) else None
    return {str(a["key"]): a for a in items or [] if isinstance(a, dict) and a.get("key")}


def _snapshot_model(snapshot: JSON) -> str | dict[str, str] | None:
    snapshot = snapshot if isinstance(snapshot, dict) else {}
    deployment = snapshot.get("deployment") if isinstance(snapshot.get("deployment"), dict) else snapshot
    account = snapshot.get("provider_account") if isinstance(snapshot.get("provider_account"), dict) else {}
    model = deployment.get("model") or snapshot.get("model")
    provider = account.get("provider_key") or snapshot.get("provider_key") or deployment.get("provider_key")
    if not model:
        return None
    return {"provider_key": str(provider or ""), "provider_model_id": str(model)}


def _verification(case_run: CaseRun) -> tuple[dict, dict, dict]:
    data = case_run.verification if isinstance(case_run.verification, dict) else {}

    def part(*names: str) -> dict:
        for name in names:
            value = data.get(name)
            if isinstance(value, dict):
                return value
        return {}

    return part("captured_files", "files"), part("directory_listings", "listings"), part("code_executions", "code")


def evidence_for_case_run(case_run: CaseRun, events: list[dict[str, JSON]] | None = None) -> CaseEvidence:
    """The scoring evidence of a case run; ``events`` (as stored, in order) skips reading them back."""
    if events is None:
        rows = (
            RunEvent.objects.filter(case_run=case_run)
            .exclude(event_type__startswith="scoring.")
            .order_by("sequence_number")
            .values_list("event_id", "event_type", "sequence_number", "occurred_at", "payload")
        )
        events = [
            {
                "event_id": event_id,
                "event_type": event_type,
                "sequence_number": sequence,
                "occurred_at": occurred_at.isoformat() if occurred_at else None,
                "payload": payload,
            }
            for event_id, event_type, sequence, occurred_at, payload in rows
        ]
    events = [{**e, "payload": _hydrate(e["payload"])} for e in events if not e["event_type"].startswith("scoring.")]
    captured, listings, code = _verification(case_run)
    status = case_run.status if case_run.status in ("completed", "failed", "cancelled") else "failed"
    return CaseEvidence(
        case_key=case_run.case_key,
        status=status,
        stop_reason=case_run.stop_reason or None,
        final_output=case_run.final_output,
        events=events,
        captured_files=captured,
        directory_listings=listings,
        code_executions=code,
        case=_case_document(case_run.case.payload),
        usage={"input_tokens": case_run.input_tokens, "output_tokens": case_run.output_tokens, "total_tokens": case_run.total_tokens},
        step_count=case_run.step_count,
        tool_call_count=case_run.tool_call_count,
        duration_ms=float(case_run.duration_ms) if case_run.duration_ms is not None else None,
        model=_snapshot_model(case_run.lane.snapshot),
        artifacts=_case_artifacts(case_run.case.payload),
    )


# -- events ---------------------------------------------------------------------------------


def _scoring_event(*, event_id: str, event_type: str, payload: dict[str, JSON], case_run: CaseRun | None = None) -> Any:
    from engine.types import Event

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


def scoring_events_append(*, lane: Lane, events: list[Any], case_run: CaseRun | None = None) -> int:
    """Append ``scoring.*`` events once each (deterministic ids), in one batch; returns how many were new.

    Goes through the runs event writer, which skips known ids and allocates the lane's next
    sequence numbers in one step, so scoring events interleave correctly with the engine's.
    """
    from runs.services.events import run_events_append

    return run_events_append(
        run_id=lane.run_id,
        lane_id=lane.pk,
        case_run_id=case_run.pk if case_run else None,
        attempt=case_run.attempt if case_run else 0,
        events=events,
    )


def scoring_event_append(*, lane: Lane, event_id: str, event_type: str, payload: dict[str, JSON], case_run: CaseRun | None = None) -> bool:
    """Append one ``scoring.*`` event once (deterministic id); False when it already existed."""
    event = _scoring_event(event_id=event_id, event_type=event_type, payload=payload, case_run=case_run)
    return scoring_events_append(lane=lane, events=[event], case_run=case_run) == 1


def _safe_emit_all(*, lane: Lane, events: list[Any], case_run: CaseRun | None = None) -> None:
    # Event failures only add a warning (§5.1); they never change a score.
    try:
        scoring_events_append(lane=lane, events=events, case_run=case_run)
    except Exception:
        logger.exception("Could not write scoring events %s", [e.event_id for e in events])


def _safe_emit(**kwargs: Any) -> None:
    # Event failures only add a warning (§5.1); they never change a score.
    try:
        scoring_event_append(**kwargs)
    except Exception:
        logger.exception("Could not write scoring event %s", kwargs.get("event_id"))


# -- judges ---------------------------------------------------------------------------------


def judge_for_lane(lane: Lane) -> Callable:
    """``judge(model, messages) -> ModelResponse`` backed by a real provider.

    Uses the workspace deployment whose model equals the judge model (its provider account and
    credential); otherwise the lane's own scripted configuration, so offline demos can judge.
    """
    from engine.providers.registry import create_provider
    from engine.types import ModelRequest
    from infrastructure.models import AgentDeployment, LifecycleStatus

    def judge(model: str, messages: list) -> Any:
        deployment = (
            AgentDeployment.objects.select_related("provider_account")
            .filter(workspace_id=lane.workspace_id, model=model, status=LifecycleStatus.ACTIVE)
            .order_by("id")
            .first()
        )
        if deployment is not None:
            account = deployment.provider_account
            provider = create_provider(
                account.provider_key,
                api_key=_credential(account),
                base_url=account.base_url or None,
                deployment_config=deployment.deployment_config or {},
            )
        else:
            snapshot = lane.snapshot if isinstance(lane.snapshot, dict) else {}
            deployment_snapshot = snapshot.get("deployment") if isinstance(snapshot.get("deployment"), dict) else snapshot
            config = deployment_snapshot.get("deployment_config") or snapshot.get("deployment_config") or {}
            provider = create_provider("scripted", api_key=None, base_url=None, deployment_config=config)
        return provider.complete(ModelRequest(model=model, messages=messages, tools=[], metadata={"purpose": "judge"}))

    return judge


def _credential(account: Any) -> str | None:
    reference = account.credential_reference or ""
    if not reference.startswith("workspace-secret://"):
        return None
    from secrets_app.services import secret_resolve

    return secret_resolve(workspace=account.workspace, key=reference.removeprefix("workspace-secret://"))


def _secret_values(run: Run) -> list[str]:
    try:
        from secrets_app.services import secrets_resolve_for_run

        return [v for v in secrets_resolve_for_run(workspace=run.workspace).values() if v]
    except Exception:
        logger.exception("Could not load workspace secrets for judge redaction")
        raise


# -- services -------------------------------------------------------------------------------


CASE_RUN_FIELDS = ("run__pack_version__manifest",)


def case_run_score(
    *,
    case_run_id: int,
    case_run: CaseRun | None = None,
    events: list[dict[str, JSON]] | None = None,
    judge_results: dict[str, dict[str, JSON]] | None = None,
) -> bool:
    """Score one finished case run and persist its CaseScore. Idempotent; never raises.

    Returns True when the case is scored. ``case_run`` (loaded with ``run__pack_version``,
    ``run__workspace``, ``lane`` and ``case``) and ``events`` (its engine events as stored, in
    sequence order) spare the reads when the caller already has them.
    """
    if case_run is None:
        case_run = (
            CaseRun.objects.select_related("run__pack_version", "run__workspace", "lane", "case")
            .defer(*CASE_RUN_FIELDS)
            .filter(pk=case_run_id)
            .first()
        )
    if case_run is None:
        logger.info("case_run_score: case run %s is gone", case_run_id)
        return False
    if not case_run.is_terminal:
        logger.info("case_run_score: case run %s is not finished (%s)", case_run_id, case_run.status)
        return False
    lane = case_run.lane
    prefix = f"scoring:{lane.pk}:case:{case_run.pk}"
    spec: dict[str, JSON] = {}
    started = None
    try:
        spec = evaluation_spec_for(case_run.run, getattr(case_run, "pack_checksum", None))
        started = _scoring_event(
            case_run=case_run,
            event_id=f"{prefix}:started",
            event_type="scoring.started",
            payload={"evaluation_spec": spec.get("name"), "scope": "case"},
        )
        evidence = evidence_for_case_run(case_run, events=events)
        needs_judge = bool(spec.get("llm_judges"))
        result = score_case(
            spec,
            evidence,
            judge=judge_for_lane(lane) if needs_judge else None,
            secret_values=_secret_values(case_run.run) if needs_judge else (),
            judge_results=judge_results,
        )
        document = result.as_dict()
        score = CaseScore(
            case_run=case_run,
            lane=lane,
            passed=document["passed"],
            overall_score=document["overall_score"],
            validity=document["validity"],
            document=document,
        )
        with transaction.atomic():
            # One upsert instead of update_or_create's savepoints, select and insert.
            CaseScore.objects.bulk_create(
                [score],
                update_conflicts=True,
                unique_fields=["case_run"],
                update_fields=["lane", "passed", "overall_score", "validity", "document"],
            )
            CaseRun.objects.filter(pk=case_run.pk).update(
                score_status=ScoreStatus.SCORED, passed=document["passed"], score=document["overall_score"]
            )
        case_run.score_status = ScoreStatus.SCORED
        case_run.passed = document["passed"]
        case_run.score = document["overall_score"]
    except Exception as exc:
        logger.exception("Scoring case run %s failed", case_run_id)
        CaseRun.objects.filter(pk=case_run.pk).update(score_status=ScoreStatus.ERRORED)
        failed = _scoring_event(
            case_run=case_run,
            event_id=f"{prefix}:failed",
            event_type="scoring.failed",
            payload={"error": f"{type(exc).__name__}: {exc}"[:500]},
        )
        _safe_emit_all(lane=lane, case_run=case_run, events=[e for e in (started, failed) if e is not None])
        return False
    batch = [started]
    for metric in document.get("metric_details") or []:
        batch.append(
            _scoring_event(
                case_run=case_run,
                event_id=f"{prefix}:metric:{metric.get('key')}",
                event_type="scoring.metric.recorded",
                payload={"metric_key": metric.get("key"), "state": metric.get("state"), "value": metric.get("value")},
            )
        )
    batch.append(
        _scoring_event(
            case_run=case_run,
            event_id=f"{prefix}:completed",
            event_type="scoring.completed",
            payload={
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
                "warnings": document["warnings"],
            },
        )
    )
    _safe_emit_all(lane=lane, case_run=case_run, events=batch)
    return True


def lane_score(*, lane_id: int) -> None:
    """Aggregate the lane's case scores into its LaneScorecard. Idempotent; never raises."""
    lane = Lane.objects.select_related("run__pack_version").filter(pk=lane_id).first()
    if lane is None:
        logger.info("lane_score: lane %s is gone", lane_id)
        return
    try:
        spec = evaluation_spec_for(lane.run)
        scores = [cs.document for cs in CaseScore.objects.filter(lane=lane).order_by("case_run__position", "case_run_id")]
        refs = {
            "run_id": lane.run_id,
            "lane_id": lane.pk,
            "pack_version_id": lane.run.pack_version_id,
            "input_set_id": lane.run.input_set_id,
        }
        if lane.status == "failed":
            refs.update(status="failed", failure_reason=lane.failure_reason)
        document = aggregate_lane(spec, scores, refs=refs)
        LaneScorecard.objects.update_or_create(
            lane=lane,
            defaults={
                "overall_score": document.get("overall_score"),
                "pass_rate": document.get("pass_rate"),
                "passed": document.get("passed"),
                "validity": document.get("validity") or "",
                "document": document,
            },
        )
    except Exception as exc:
        logger.exception("Scoring lane %s failed", lane_id)
        _safe_emit(
            lane=lane,
            event_id=f"scoring:{lane.pk}:lane:failed",
            event_type="scoring.failed",
            payload={"error": f"{type(exc).__name__}: {exc}"[:500], "scope": "lane"},
        )
        return
    _safe_emit(
        lane=lane,
        event_id=f"scoring:{lane.pk}:{spec.get('name') or 'spec'}:completed",
        event_type="scoring.completed",
        payload={
            "scope": "lane",
            "evaluation_spec": spec.get("name"),
            "validity": document.get("validity"),
            "validity_reason": document.get("validity_reason"),
            "overall_score": document.get("overall_score"),
            "pass_rate": document.get("pass_rate"),
            "passed": document.get("passed"),
            "dimension_scores": {k: v.get("mean") for k, v in (document.get("dimensions") or {}).items()},
            "warnings": document.get("warnings") or [],
        },
    )


def _score_nwise_judges(run: Run, lanes: list[Lane]) -> set[int]:
    """Run the spec's ``n_wise`` judges across lanes, case by case, and re-score those cases.

    A case scorer sees one lane, so n_wise judges (which rank the lanes' answers to the same
    case against each other) can only run once every lane is done. The other judges' stored
    results are reused, so re-scoring makes no second call for them. Returns the lane ids whose
    case scores changed.
    """
    from engine.scoring.judges import run_nwise_judge

    spec = evaluation_spec_for(run)
    keys = [str(d.get("key")) for d in spec.get("llm_judges") or [] if isinstance(d, dict) and d.get("mode") == "n_wise"]
    if not keys or len(lanes) < 2:
        return set()
    by_case: dict[str, list[CaseRun]] = {}
    case_runs = (
        CaseRun.objects.select_related("run__pack_version", "run__workspace", "lane", "case", "case_score")
        .filter(run=run)
        .order_by("lane__lane_index")
    )
    for case_run in case_runs:
        by_case.setdefault(case_run.case_key, []).append(case_run)
    secret_values = _secret_values(run)
    judge = judge_for_lane(lanes[0])
    rescored: set[int] = set()
    for case_key, group in by_case.items():
        if len(group) < 2:
            continue
        candidates = [(str(cr.lane_id), evidence_for_case_run(cr)) for cr in group]
        ranked = {
            key: run_nwise_judge(spec, key, candidates, judge, run_id=f"{run.pk}:{case_key}", secret_values=secret_values) for key in keys
        }
        for case_run in group:
            stored = getattr(case_run, "case_score", None)
            previous = {
                str(j.get("judge_key")): j
                for j in ((stored.document if stored else {}) or {}).get("llm_judge_details") or []
                if isinstance(j, dict) and str(j.get("judge_key")) not in keys
            }
            results = {**previous, **{key: ranked[key][str(case_run.lane_id)] for key in keys if str(case_run.lane_id) in ranked[key]}}
            if case_run_score(case_run_id=case_run.pk, case_run=case_run, judge_results=results):
                rescored.add(case_run.lane_id)
    return rescored


def run_score(*, run_id: int) -> None:
    """Rank the run's lanes into its RunScorecard and settle ``Run.score_status``. Never raises."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        logger.info("run_score: run %s is gone", run_id)
        return
    try:
        lanes = list(Lane.objects.filter(run=run).order_by("lane_index"))
        rescored = _score_nwise_judges(run, lanes)
        for lane in lanes:
            if lane.pk in rescored or not LaneScorecard.objects.filter(lane=lane).exists():
                lane_score(lane_id=lane.pk)
        cards = {str(c.lane_id): c.document for c in LaneScorecard.objects.filter(lane__run=run)}
        missing = [lane.label for lane in lanes if str(lane.pk) not in cards]
        if missing or not lanes:
            raise RuntimeError(f"no scorecard for lane(s): {', '.join(missing) or 'none'}")
        errored = CaseRun.objects.filter(run=run, score_status=ScoreStatus.ERRORED).count()
        document = rank_lanes(cards)
        document["errored_case_count"] = errored
        winner = document.get("winner_lane_id")
        RunScorecard.objects.update_or_create(run=run, defaults={"winner_lane_id": int(winner) if winner else None, "document": document})
        Run.objects.filter(pk=run.pk).update(score_status=ScoreStatus.SCORED)
    except Exception as exc:
        logger.exception("Scoring run %s failed", run_id)
        Run.objects.filter(pk=run.pk).update(score_status=ScoreStatus.ERRORED)
        RunScorecard.objects.update_or_create(
            run=run, defaults={"winner_lane": None, "document": {"error": f"{type(exc).__name__}: {exc}"[:500]}}
        )
