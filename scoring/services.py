"""Scoring services: case → lane → run scorecards (runtime.md §5), called by the run lifecycle.

Each function is idempotent and never raises: a failure marks the row ``errored`` and emits a
``scoring.failed`` event. The engine (``engine.scoring``) does the maths; ``evidence`` builds what
it reads from the database, ``judges`` gives it providers, ``events`` records what happened.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from django.db import transaction

from engine.events import SCORING_COMPLETED, SCORING_FAILED, SCORING_STARTED
from engine.scoring import aggregate_lane, rank_lanes, score_case
from engine.scoring.judges import run_nwise_judge
from engine.scoring.security import SecurityPolicy
from engine.types import Event
from packs.manifests import pack_manifest
from runs.models import CaseRun, Lane, Run, ScoreStatus
from runs.precompiled import RowUpsert
from scoring.events import case_scored_events, scoring_event, scoring_event_record, scoring_events_record
from scoring.evidence import evidence_for_case_run
from scoring.judges import judge_for_run, secret_values_for_run
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.prices import workspace_prices_for

logger = logging.getLogger(__name__)

JSON = Any


def evaluation_spec_for(run: Run, checksum: str | None = None) -> dict[str, JSON]:
    """The version's evaluation spec, from the manifest cache; ``checksum`` spares loading the version."""
    if checksum is None and Run.pack_version.is_cached(run):
        checksum = run.pack_version.manifest_checksum
    return pack_manifest(pack_version_id=run.pack_version_id, checksum=checksum).evaluation_spec


def security_policy_for(run: Run, checksum: str | None = None) -> SecurityPolicy | None:
    """The pack's security policy when it is a security pack (docs/security-evaluation.md)."""
    if checksum is None and Run.pack_version.is_cached(run):
        checksum = run.pack_version.manifest_checksum
    return SecurityPolicy.from_manifest(pack_manifest(pack_version_id=run.pack_version_id, checksum=checksum).manifest)


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


@transaction.atomic
def _case_score_save(case_run: CaseRun, document: dict[str, JSON]) -> None:
    case_score_upsert(case_run=case_run, document=document)
    CaseRun.objects.filter(pk=case_run.pk).update(
        score_status=ScoreStatus.SCORED, passed=document["passed"], score=document["overall_score"]
    )
    case_run.score_status, case_run.passed, case_run.score = ScoreStatus.SCORED, document["passed"], document["overall_score"]


_CASE_SCORE_UPSERT = RowUpsert(CaseScore, unique="case_run", update=("lane", "passed", "overall_score", "validity", "document"))


def case_score_upsert(*, case_run: CaseRun, document: dict[str, JSON]) -> None:
    """Write the case's CaseScore (the case row's own score fields are the caller's)."""
    score = CaseScore(
        case_run=case_run,
        lane=case_run.lane,
        passed=document["passed"],
        overall_score=document["overall_score"],
        validity=document["validity"],
        document=document,
    )
    # One upsert instead of update_or_create's savepoints, select and insert (its SQL built once).
    _CASE_SCORE_UPSERT(score)


def _case_document(
    case_run: CaseRun, spec: dict[str, JSON], events: list[dict[str, JSON]] | None, judge_results: dict[str, dict[str, JSON]] | None
) -> dict[str, JSON]:
    evidence = evidence_for_case_run(case_run, events=events)
    needs_judge = bool(spec.get("llm_judges"))
    result = score_case(
        spec,
        evidence,
        judge=judge_for_run(case_run.run) if needs_judge else None,
        secret_values=secret_values_for_run(case_run.run) if needs_judge else (),
        judge_results=judge_results,
        fallback_pricing=workspace_prices_for(case_run),
        security=security_policy_for(case_run.run, getattr(case_run, "pack_checksum", None)),
    )
    return result.as_dict()


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
    case_run = _scorable(case_run_id, case_run)
    if case_run is None:
        return False
    lane = case_run.lane
    prefix = f"scoring:{lane.pk}:case:{case_run.pk}"
    started = None
    try:
        spec = evaluation_spec_for(case_run.run, getattr(case_run, "pack_checksum", None))
        payload = {"evaluation_spec": spec.get("name"), "scope": "case"}
        started = scoring_event(case_run=case_run, event_id=f"{prefix}:started", event_type=SCORING_STARTED, payload=payload)
        document = _case_document(case_run, spec, events, judge_results)
        _case_score_save(case_run, document)
    except Exception as exc:
        logger.exception("Scoring case run %s failed", case_run_id)
        CaseRun.objects.filter(pk=case_run.pk).update(score_status=ScoreStatus.ERRORED)
        payload = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        failed = scoring_event(case_run=case_run, event_id=f"{prefix}:failed", event_type=SCORING_FAILED, payload=payload)
        scoring_events_record(lane=lane, case_run=case_run, events=[e for e in (started, failed) if e is not None])
        return False
    batch = [started, *case_scored_events(case_run=case_run, prefix=prefix, spec=spec, document=document)]
    scoring_events_record(lane=lane, case_run=case_run, events=batch)
    return True


@dataclasses.dataclass(frozen=True)
class CaseScoring:
    """A case's verdict computed in memory, to be saved with the case's finish (one transaction).

    ``document`` is None when scoring failed; ``events`` are the ``scoring.*`` events to record
    either way; ``fields`` are the case row's score fields.
    """

    document: dict[str, JSON] | None
    events: list[Event]

    @property
    def fields(self) -> dict[str, JSON]:
        if self.document is None:
            return {"score_status": ScoreStatus.ERRORED}
        return {"score_status": ScoreStatus.SCORED, "passed": self.document["passed"], "score": self.document["overall_score"]}


def case_run_score_prepare(*, case_run: CaseRun, events: list[dict[str, JSON]]) -> CaseScoring | None:
    """Score a finishing case from its events without writing anything; None when it needs LLM judges.

    ``case_run`` holds its final fields (not saved yet) and is loaded as the claim loads it;
    ``events`` are its engine events as they will read back. The worker saves the result with
    the case's finish and its last event batch (runs/pipeline/execute.py, docs/performance.md).
    A case with LLM judges is scored after its finish instead (a judge call is slow and may fail
    on its own), by :func:`case_run_score`.
    """
    prefix = f"scoring:{case_run.lane_id}:case:{case_run.pk}"
    started = None
    try:
        spec = evaluation_spec_for(case_run.run, getattr(case_run, "pack_checksum", None))
        if spec.get("llm_judges"):
            return None
        payload = {"evaluation_spec": spec.get("name"), "scope": "case"}
        started = scoring_event(case_run=case_run, event_id=f"{prefix}:started", event_type=SCORING_STARTED, payload=payload)
        document = _case_document(case_run, spec, events, None)
    except Exception as exc:
        logger.exception("Scoring case run %s failed", case_run.pk)
        payload = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        failed = scoring_event(case_run=case_run, event_id=f"{prefix}:failed", event_type=SCORING_FAILED, payload=payload)
        return CaseScoring(document=None, events=[e for e in (started, failed) if e is not None])
    return CaseScoring(
        document=document, events=[started, *case_scored_events(case_run=case_run, prefix=prefix, spec=spec, document=document)]
    )


def lane_score(*, lane_id: int) -> None:
    """Aggregate the lane's case scores into its LaneScorecard. Idempotent; never raises."""
    # The manifest is deferred: the spec comes from the per-process cache (by checksum).
    lane = Lane.objects.select_related("run__pack_version").defer("run__pack_version__manifest").filter(pk=lane_id).first()
    if lane is None:
        logger.info("lane_score: lane %s is gone", lane_id)
        return
    try:
        spec = evaluation_spec_for(lane.run)
        documents = CaseScore.objects.filter(lane=lane).order_by("case_run__position", "case_run_id").values_list("document", flat=True)
        strings: dict[str, str] = {}
        scores = [_share_strings(document, strings) for document in documents.iterator(chunk_size=500)]
        del strings
        refs: dict[str, Any] = {
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
        scoring_event_record(
            lane=lane,
            event_id=f"scoring:{lane.pk}:lane:failed",
            event_type=SCORING_FAILED,
            payload={"error": f"{type(exc).__name__}: {exc}"[:500], "scope": "lane"},
        )
        return
    scoring_event_record(
        lane=lane,
        event_id=f"scoring:{lane.pk}:{spec.get('name') or 'spec'}:completed",
        event_type=SCORING_COMPLETED,
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


def _share_strings(value: JSON, strings: dict[str, str]) -> JSON:
    """``value`` with its keys and short strings shared across documents (docs/performance.md).

    ``json.loads`` shares a key only within one document, so a lane's 2,500 case-score
    documents held at once took about 35 MB in a pool process, most of it the same few hundred
    keys and labels over again; shared, about 12 MB. The result is equal to ``value``.
    """
    if isinstance(value, dict):
        return {strings.setdefault(k, k) if isinstance(k, str) else k: _share_strings(v, strings) for k, v in value.items()}
    if isinstance(value, list):
        return [_share_strings(v, strings) for v in value]
    if isinstance(value, str) and len(value) <= 64:
        return strings.setdefault(value, value)
    return value


def _score_nwise_judges(run: Run, lanes: list[Lane]) -> set[int]:
    """Run the spec's ``n_wise`` judges across lanes, case by case, and re-score those cases.

    A case scorer sees one lane, so n_wise judges (which rank the lanes' answers to the same
    case against each other) can only run once every lane is done. The other judges' stored
    results are reused, so re-scoring makes no second call for them. Returns the lane ids whose
    case scores changed.
    """
    spec = evaluation_spec_for(run)
    keys = [str(d.get("key")) for d in spec.get("llm_judges") or [] if isinstance(d, dict) and d.get("mode") == "n_wise"]
    if not keys or len(lanes) < 2:
        return set()
    by_case: dict[str, list[CaseRun]] = {}
    case_runs = (
        CaseRun.objects.select_related("run__pack_version", "run__workspace", "lane", "case", "case_score")
        .defer(*CASE_RUN_FIELDS)  # not a copy of the manifest per case run: the spec comes from the cache
        .filter(run=run)
        .order_by("lane__lane_index")
    )
    for case_run in case_runs:
        by_case.setdefault(case_run.case_key, []).append(case_run)
    secret_values = secret_values_for_run(run)
    judge = judge_for_run(run)
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
