"""Scoring services: case → lane → run scorecards (runtime.md §5), called by the run lifecycle.

Each function is idempotent and never raises: a failure marks the row ``errored`` and emits a
``scoring.failed`` event. The engine (``engine.scoring``) does the maths; ``evidence`` builds what
it reads from the database, ``judges`` gives it providers, ``events`` records what happened.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, cast

from django.db import transaction

from engine.events import SCORING_COMPLETED, SCORING_FAILED, SCORING_STARTED
from engine.scoring import aggregate_lane, rank_lanes, score_case
from engine.scoring.documents import CaseScoreDocument, JudgeResult, LaneRefs
from engine.scoring.judges import run_nwise_judge
from engine.scoring.refusal import REFUSAL_JUDGE
from engine.scoring.security import SecurityPolicy
from engine.scoring.spec import EvaluationSpec
from engine.types import JSON, Event, JSONObject
from packs.manifests import pack_manifest
from runs.adapters.statements import RowUpsert
from runs.models import CaseRun, Lane, Run, ScoreStatus
from scoring.events import case_scored_events, scoring_event, scoring_event_record, scoring_events_record
from scoring.evidence import evidence_for_case_run
from scoring.judges import judge_for_run, secret_values_for_run
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.prices import workspace_prices_for

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
    and ``case``; ``events`` are its engine events as stored, in sequence order (None: read them);
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
    (runs/pipeline/finish.py), which writes the row's score fields with the finish (one ``UPDATE``)
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
        # Stored case documents are CaseScoreDocuments (scoring/services.py writes nothing else).
        scores = [cast(CaseScoreDocument, _share_strings(document, strings)) for document in documents.iterator(chunk_size=500)]
        del strings
        refs: LaneRefs = {
            "run_id": lane.run_id,
            "lane_id": lane.pk,
            "pack_version_id": lane.run.pack_version_id,
            "input_set_id": lane.run.input_set_id,
        }
        if lane.status == "failed":
            refs["status"], refs["failure_reason"] = "failed", lane.failure_reason
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
            "warnings": [*(document.get("warnings") or [])],
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
            previous: dict[str, JudgeResult] = {
                str(j.get("judge_key")): cast(JudgeResult, j)
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
