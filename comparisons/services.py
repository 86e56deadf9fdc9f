"""Writes for comparisons and release gates (runtime.md §6).

A comparison pairs a baseline lane with a candidate lane. Which lanes those are is settled here
(participant resolution); whether their scorecards can be compared is the engine's call
(``engine.scoring.compare``), and a non-comparable result is stored too, with its reason code,
so people can see *why*. Both writes are idempotent: the same inputs return the same row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction

from comparisons.models import Comparison, GateResult
from core.actors import actor_or_none
from core.errors import DomainError
from core.writes import insert_or_none
from engine.scoring.compare import build_comparison, not_comparable
from engine.scoring.documents import ComparisonSummary, GatePolicy, LaneScorecardDocument, RegressionCaseResult, Sides
from engine.scoring.evidence import canonical_json
from engine.scoring.gates import evaluate_gate, normalize_policy, parse_policy, policy_fingerprint
from engine.scoring.stats import trials_to_columns
from regression.selectors import lane_regression_entries
from runs.models import Lane, Run
from scoring.models import LaneScorecard
from scoring.selectors import lane_trials
from workspaces.models import Workspace


class ComparisonError(DomainError):
    """Participants could not be resolved (a 400): ``code`` is one of the §6.1 reason codes, which
    the API's error body repeats as ``reason_code``; ``field`` is the API field at fault."""

    def __init__(self, message: str, *, field: str, code: str) -> None:
        super().__init__(message, field=field, code=code, extra={"reason_code": code})


def _clean(row: models.Model) -> None:
    """A model rule the row breaks as a DomainError. Uniqueness is left to the fingerprint lookup
    and the database (a concurrent twin is an IntegrityError the caller handles)."""
    try:
        row.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise DomainError.from_validation_error(exc) from None


def _pack_label(run: Run) -> str:
    return f"{run.pack_version.pack.name} v{run.pack_version.number}"


def _single_lane(run: Run, side: str) -> Lane:
    lanes = list(Lane.objects.filter(run=run).order_by("lane_index")[:2])
    if len(lanes) != 1:
        raise ComparisonError(
            f"The {side} run has {'no lanes' if not lanes else 'several lanes'}; pick the {side} lane to compare.",
            field=f"{side}_lane_id",
            code="participant_count_mismatch",
        )
    return lanes[0]


def resolve_participants(
    *, workspace: Workspace, baseline_run: Run, candidate_run: Run, baseline_lane: Lane | None, candidate_lane: Lane | None
) -> tuple[Lane, Lane]:
    for side, run in (("baseline", baseline_run), ("candidate", candidate_run)):
        if run.workspace_id != workspace.pk:
            raise ComparisonError(
                f"The {side} run is not in this workspace: pick a run of this workspace.",
                field=f"{side}_run_id",
                code=f"{side}_run_agent_unresolved",
            )
    if baseline_run.pk == candidate_run.pk and (baseline_lane is None or candidate_lane is None):
        raise ComparisonError(
            "Comparing a run with itself needs a baseline lane and a different candidate lane: pick both lanes.",
            field="candidate_lane_id",
            code="participant_match_not_resolved",
        )
    try:
        baseline = baseline_lane or _single_lane(baseline_run, "baseline")
        candidate = candidate_lane or _single_lane(candidate_run, "candidate")
    except ComparisonError:
        if baseline_run.pack_version_id == candidate_run.pack_version_id:
            raise
        # Issue 25: two packs are the real problem, not "several lanes" (picking a lane would not help).
        raise ComparisonError(
            f"The baseline run is of {_pack_label(baseline_run)} and the candidate run of {_pack_label(candidate_run)}: "
            "a comparison needs two runs of the same pack version; pick runs of one pack version.",
            field="candidate_run_id",
            code="challenge_pack_version_mismatch",
        ) from None
    for side, lane, run in (("baseline", baseline, baseline_run), ("candidate", candidate, candidate_run)):
        if lane.run_id != run.pk or lane.workspace_id != workspace.pk:
            raise ComparisonError(
                f"The {side} lane does not belong to the {side} run: pick one of that run's lanes.",
                field=f"{side}_lane_id",
                code=f"{side}_run_agent_unresolved",
            )
    if baseline.pk == candidate.pk:
        raise ComparisonError(
            "The baseline and candidate lanes must be different: pick another candidate lane.",
            field="candidate_lane_id",
            code="participant_match_not_resolved",
        )
    return baseline, candidate


def _scorecard(lane: Lane) -> LaneScorecardDocument | None:
    card = LaneScorecard.objects.filter(lane=lane).only("document").first()
    if card is None or not card.document:
        return None
    document: LaneScorecardDocument = card.document
    return document


def _race_context_refusal(baseline_run: Run, candidate_run: Run, baseline: Lane, candidate: Lane) -> ComparisonSummary | None:
    """A race-context run is not compared with a plain one: its agents were told the peers' standings."""
    if bool(baseline_run.race_context) == bool(candidate_run.race_context):
        return None
    on, off = ("baseline", "candidate") if baseline_run.race_context else ("candidate", "baseline")
    return not_comparable(
        "race_context_mismatch",
        f"the {on} run had peer standings (race context) on and the {off} run did not",
        {"refs": {"run_id": baseline_run.pk, "lane_id": baseline.pk, "race_context": bool(baseline_run.race_context)}},
        {"refs": {"run_id": candidate_run.pk, "lane_id": candidate.pk, "race_context": bool(candidate_run.race_context)}},
    )


def _fingerprint(baseline: Lane, candidate: Lane, summary: ComparisonSummary) -> str:
    # The engine's fingerprint covers the two scorecards; the lane ids make two lanes that have
    # no scorecard yet (identical "missing" inputs) distinct pairs.
    source = {"baseline_lane": baseline.pk, "candidate_lane": candidate.pk, "summary": summary.get("fingerprint")}
    return hashlib.sha256(canonical_json(source).encode()).hexdigest()


def _with_regression(summary: ComparisonSummary, baseline: Lane, candidate: Lane) -> ComparisonSummary:
    """Add each lane's regression case results (runs/regression) to what the scorecards tagged,
    so the gate's regression rules see them (engine/scoring/gates.py)."""
    entries = {"baseline": lane_regression_entries(lane=baseline), "candidate": lane_regression_entries(lane=candidate)}
    if not any(entries.values()):
        return summary
    found = summary.get("regression")
    tagged: Sides[list[RegressionCaseResult] | None] = found if isinstance(found, dict) else {"baseline": None, "candidate": None}

    def side(name: Literal["baseline", "candidate"]) -> list[RegressionCaseResult] | None:
        return [*(tagged.get(name) or []), *(entries[name] or [])] or None

    summary["regression"] = {"baseline": side("baseline"), "candidate": side("candidate")}
    return summary


def _with_trials(summary: ComparisonSummary, baseline: Lane, candidate: Lane, *, adaptive: bool) -> ComparisonSummary:
    """Add both lanes' trials by case (one query) to a comparable summary: the gate pairs them case
    by case (engine.scoring.gates.trial_statistics). Stored with the comparison, so a gate
    evaluated later reads the trials the compared scorecards were made of."""
    if summary.get("status") != "comparable":
        return summary
    trials = lane_trials(lane_ids=[baseline.pk, candidate.pk])
    summary["trials"] = {"baseline": trials_to_columns(trials[baseline.pk]), "candidate": trials_to_columns(trials[candidate.pk])}
    if adaptive:
        summary["trials_sequential"] = True
    return summary


def comparison_get_or_create(
    *,
    workspace: Workspace,
    user: Any,
    baseline_run: Run,
    candidate_run: Run,
    baseline_lane: Lane | None = None,
    candidate_lane: Lane | None = None,
) -> tuple[Comparison, bool]:
    baseline, candidate = resolve_participants(
        workspace=workspace,
        baseline_run=baseline_run,
        candidate_run=candidate_run,
        baseline_lane=baseline_lane,
        candidate_lane=candidate_lane,
    )
    summary = _race_context_refusal(baseline_run, candidate_run, baseline, candidate) or _with_trials(
        _with_regression(build_comparison(_scorecard(baseline), _scorecard(candidate)), baseline, candidate),
        baseline,
        candidate,
        adaptive=baseline_run.is_adaptive or candidate_run.is_adaptive,
    )
    fingerprint = _fingerprint(baseline, candidate, summary)
    existing = Comparison.objects.filter(workspace=workspace, fingerprint=fingerprint).first()
    if existing is not None:
        return existing, False
    comparison = Comparison(
        workspace=workspace,
        baseline_run=baseline_run,
        candidate_run=candidate_run,
        baseline_lane=baseline,
        candidate_lane=candidate,
        status=summary.get("status") or "not_comparable",
        reason_code=summary.get("reason_code") or "",
        fingerprint=fingerprint,
        summary=summary,
        created_by=actor_or_none(user),
    )
    _clean(comparison)
    try:
        with transaction.atomic():
            comparison.save()
    except IntegrityError:  # a concurrent identical request won the race
        return Comparison.objects.get(workspace=workspace, fingerprint=fingerprint), False
    return comparison, True


def comparison_create(
    *,
    workspace: Workspace,
    user: Any,
    baseline_run: Run,
    candidate_run: Run,
    baseline_lane: Lane | None = None,
    candidate_lane: Lane | None = None,
) -> Comparison:
    comparison, _ = comparison_get_or_create(
        workspace=workspace,
        user=user,
        baseline_run=baseline_run,
        candidate_run=candidate_run,
        baseline_lane=baseline_lane,
        candidate_lane=candidate_lane,
    )
    return comparison


def policy_from(*, policy_text: str | None = None, policy: Mapping[str, object] | str | None = None) -> GatePolicy:
    """A validated policy from JSON/YAML text or an already-parsed mapping; blank → the default.
    A policy the gate cannot read is a DomainError about the ``policy`` field."""
    try:
        if policy is not None and not isinstance(policy, str):
            return normalize_policy(policy) if policy else normalize_policy(None)
        text = policy if isinstance(policy, str) else policy_text
        if text is None or not text.strip():
            return normalize_policy(None)
        return parse_policy(text)
    except ValueError as exc:
        raise DomainError(str(exc), field="policy") from None


@transaction.atomic
def gate_evaluate_get_or_create(
    *, comparison: Comparison, user: Any, policy_text: str | None = None, policy: Mapping[str, object] | str | None = None
) -> tuple[GateResult, bool]:
    """Evaluate a policy on a comparison. The same policy on the same comparison returns the same row.

    A comparison never changes after it is stored, so neither does the verdict of one policy on
    it; the rows of different policies form the pair's gate history.
    """
    normalized = policy_from(policy_text=policy_text, policy=policy)
    fingerprint = policy_fingerprint(normalized)
    existing = GateResult.objects.filter(comparison=comparison, policy_fingerprint=fingerprint).first()
    if existing is not None:
        return existing, False
    summary: ComparisonSummary = comparison.summary
    result = evaluate_gate(summary, normalized)
    gate = GateResult(
        comparison=comparison,
        workspace_id=comparison.workspace_id,
        verdict=result["verdict"],
        reason_code=result.get("reason_code") or "",
        summary=result.get("summary") or "",
        policy_snapshot=result.get("policy") or normalized,
        policy_fingerprint=fingerprint,
        details=json.loads(json.dumps(result, default=str)),
        created_by=actor_or_none(user),
    )
    _clean(gate)
    if insert_or_none(gate) is None:  # a concurrent evaluation of the same policy won
        return GateResult.objects.get(comparison=comparison, policy_fingerprint=fingerprint), False
    return gate, True


def gate_evaluate(
    *, comparison: Comparison, user: Any, policy_text: str | None = None, policy: Mapping[str, object] | str | None = None
) -> GateResult:
    gate, _ = gate_evaluate_get_or_create(comparison=comparison, user=user, policy_text=policy_text, policy=policy)
    return gate
