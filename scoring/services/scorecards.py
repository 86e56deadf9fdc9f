"""Lane and run scorecards (runtime.md §5): a lane's case scores aggregated, the run's lanes ranked.

Each function is idempotent and never raises: a failure is recorded (a ``scoring.failed`` event,
an errored run scorecard). The engine (``engine.scoring``) does the maths.
"""

from __future__ import annotations

import logging
from typing import cast

from engine.events import SCORING_COMPLETED, SCORING_FAILED
from engine.scoring import aggregate_lane, rank_lanes
from engine.scoring.documents import CaseScoreDocument, JudgeResult, LaneRefs
from engine.scoring.judges import run_nwise_judge
from engine.scoring.stats import lane_statistics
from engine.types import JSON
from runs.models import CaseRun, Lane, Run, ScoreStatus
from scoring.judges import judge_for_run, secret_values_for_run
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.selectors import lane_trials
from scoring.services.cases import CASE_RUN_FIELDS, case_run_score, evaluation_spec_for, evidence_for_case_run, scoring_event_record

logger = logging.getLogger(__name__)


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
        # Stored case documents are CaseScoreDocuments (scoring/services/cases.py writes nothing else).
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
        # Stored with the scorecard: pages and the API read it without a query per trial.
        document["statistics"] = lane_statistics(lane_trials(lane_ids=[lane.pk])[lane.pk])
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
    by_case: dict[tuple[str, int], list[CaseRun]] = {}  # the lanes' runs of one case and trial are ranked together
    case_runs = (
        CaseRun.objects.select_related("run__pack_version", "run__workspace", "lane", "case", "case_score")
        .defer(*CASE_RUN_FIELDS)  # not a copy of the manifest per case run: the spec comes from the cache
        .filter(run=run)
        .order_by("lane__lane_index")
    )
    for case_run in case_runs:
        by_case.setdefault((case_run.case_key, case_run.trial), []).append(case_run)
    secret_values = secret_values_for_run(run)
    judge = judge_for_run(run)
    rescored: set[int] = set()
    for (case_key, trial), group in by_case.items():
        if len(group) < 2:
            continue
        candidates = [(str(cr.lane_id), evidence_for_case_run(cr)) for cr in group]
        judged = f"{run.pk}:{case_key}" + (f":{trial}" if trial != 1 else "")
        ranked = {key: run_nwise_judge(spec, key, candidates, judge, run_id=judged, secret_values=secret_values) for key in keys}
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
