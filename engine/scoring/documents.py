"""The documents scoring produces and the apps store: their exact keys, as TypedDicts.

* :class:`CaseScoreDocument` — ``score_case(...).as_dict()`` (``CaseScore.document``);
* :class:`LaneScorecardDocument` — ``aggregate_lane`` (``LaneScorecard.document``);
* :class:`RunScorecardDocument` — ``rank_lanes`` (``RunScorecard.document``);
* :class:`ComparisonSummary` — ``compare.build_comparison`` / ``compare.not_comparable``
  (``Comparison.summary``);
* :class:`GateResultDocument` — ``gates.evaluate_gate`` (``GateResult.details``), with the
  normalised policy :class:`GatePolicy` (``gates.normalize_policy`` / ``gates.parse_policy``).

docs/scoring.md and docs/comparisons.md describe what each key means. A key that is only
sometimes present is ``NotRequired``; a value that may be null says ``| None``. Values the
engine copies from a pack or a provider without a fixed shape are :data:`engine.types.JSON`.
engine/tests/scoring/test_documents.py checks, for each document built by its real producer,
that its keys are exactly these.

Stored documents may be older than these types (a key added since is missing): the engine's
readers use ``.get`` on them, and so should other readers of stored documents.

This module does not use ``from __future__ import annotations``: on Python 3.11, ``NotRequired``
in a postponed annotation is not seen at run time, and ``__required_keys__`` would be wrong.
"""

from typing import Generic, NotRequired, TypedDict, TypeVar, cast

from engine.scoring.stats import GateStatistics, LaneStatistics, TrialColumns
from engine.types import JSON, JSONObject

T = TypeVar("T")


class Sides(TypedDict, Generic[T]):
    """One value per side of a comparison."""

    baseline: T
    candidate: T


# -- the case score document (CaseScore.as_dict) -------------------------------------------------


class CaseDimension(TypedDict):
    """One scorecard dimension of one case (``DimensionScore.as_dict``)."""

    key: str
    source: str  # validators | reliability | latency | cost | metric | behavioral | llm_judge | human_preference | ""
    state: str  # available | unavailable | not_applicable | error
    score: float | None  # normalised, higher is better
    reason: str
    weight: float
    gate: bool
    pass_threshold: float | None
    declared_direction: str  # as the pack declared it (higher | lower | "")
    better_direction: str  # always "higher" after normalisation
    raw_value: float | None  # latency, cost and metric dimensions: the value before normalisation
    low_confidence: bool  # llm_judge dimensions whose judge result has confidence "low"


# ``pass`` is a keyword, hence the functional syntax.
ValidatorSummary = TypedDict(
    "ValidatorSummary",
    {"total": int, "available": int, "unavailable": int, "error": int, "pass": int, "fail": int},
)


class RegressionTag(TypedDict):
    """A validator declaration's ``regression_case_id`` tag (docs/comparisons.md, regression rules)."""

    regression_case_id: str | int
    suite_id: str | int | None
    severity: str  # blocking | warning


class ValidatorDetail(TypedDict):
    """One validator's result (``ValidatorResult.as_dict``)."""

    key: str
    type: str
    verdict: str  # pass | fail | error ("fail" with state unavailable when evidence is missing)
    state: str  # available | unavailable | error
    outcome_class: str  # pass | fail | unavailable | infra_error | pack_error | evaluator_error
    normalized_score: float | None
    reason: str
    target: str
    expected_from: str | None
    expected: JSON  # what the validator compared, for display (long strings cut)
    actual: JSON
    evidence_event_id: str | None
    regression: RegressionTag | None


class MetricDetail(TypedDict):
    """One declared metric (``MetricResult.as_dict``)."""

    key: str
    type: str
    collector: str
    unit: str | None
    state: str  # available | unavailable | error
    value: JSON  # what the collector returned
    numeric_value: float | None
    boolean_value: bool | None
    text_value: str | None
    reason: str


class BehavioralSignalResult(TypedDict):
    """One ``evaluation_spec.behavioral.signals`` entry, scored."""

    key: str
    score: float
    weight: float
    gate: bool
    pass_threshold: float | None
    passed: bool | None  # None unless the signal is a gate


class JudgeCall(TypedDict):
    """One call of one judge model (one sample)."""

    model: str  # as the pack wrote it
    provider_key: str | None  # the provider actually called
    called_model: str | None
    deployment: str | None
    sample_index: int
    score: float | dict[str, float] | None  # n_wise judges: a score per candidate id
    confidence: str | None
    error: str | None
    response_text: str | None


class JudgePayload(TypedDict):
    calls: list[JudgeCall]
    model_scores: NotRequired[dict[str, float]]  # absent when the judge raised (state error)
    aggregated_score: NotRequired[float | None]  # absent when the judge raised (state error)
    warnings: list[str]


class JudgeResult(TypedDict):
    """One LLM judge's result for a case (``llm_judge_details``; ``run_nwise_judge``'s values)."""

    judge_key: str | None
    mode: str | None
    state: str  # available | unavailable | not_applicable | error
    normalized_score: float | None
    confidence: str | None  # low | medium | high | single-model
    variance: float | None
    sample_count: int
    model_count: int
    reason: str
    payload: JudgePayload


class TokenUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class ModelCost(TypedDict):
    """One priced model. The token counts are absent when the case had no per-model usage and
    its run totals were priced as its one model's."""

    provider_key: str
    provider_model_id: str
    input_tokens: NotRequired[int]
    output_tokens: NotRequired[int]
    cost_usd: float
    source: str  # pack | scripted | workspace | genai-prices <version>


class CostDetail(TypedDict):
    state: str  # available | unavailable
    reason: str
    per_model: list[ModelCost]


class SideMetrics(TypedDict):
    cost_per_correct_usd: float | None


class SecurityFinding(TypedDict):
    """A security finding (``Finding.as_dict``): empty fields are left out."""

    kind: str  # planted_secret_leaked | forbidden_output_matched | forbidden_egress | adversarial_accepted
    severity: str  # low | medium | high | critical, or warning (an unconfirmed adversarial_accepted)
    subject: NotRequired[str]  # the secret's name, the rule's description, the prompt's name
    surface: NotRequired[str]  # assistant_text | final_output | tool_call | egress | file | probe
    event_id: NotRequired[str]
    event_type: NotRequired[str]
    encoding: NotRequired[str]
    tool_name: NotRequired[str]
    path: NotRequired[str]
    host: NotRequired[str]
    strategy: NotRequired[str]
    excerpt: NotRequired[str]
    confirmation: NotRequired[str]  # adversarial_accepted: turn_finding | compliance_marker | judge | unconfirmed
    reason: NotRequired[str]  # adversarial_accepted: why, in words


class SecurityProbe(TypedDict):
    name: str
    strategy: str
    checks_refusal: bool
    status: str  # not_sent | unanswered | answered | refused | accepted | unconfirmed
    event_id: str
    judge: NotRequired[str]  # the refusal judge's verdict when it decided: refused | complied


class PlantedSecretSummary(TypedDict):
    name: str
    location: str
    severity: str
    staged: bool


class SecurityChecks(TypedDict):
    planted_secrets: int
    forbidden_outputs: int
    forbidden_egress: int
    adversarial_prompts: int


class SecurityReport(TypedDict):
    """A security pack's check of one case (``security.security_report``)."""

    checked: bool
    default_severity: str
    passed: bool | None  # None: no blocking finding, but the evidence is missing
    blocking: bool
    reason: str
    evidence: str  # complete | missing (a completed case none of whose adversarial prompts got an answer)
    missing_evidence: str  # why, in words ('' when complete)
    findings: list[SecurityFinding]
    counts: dict[str, int]  # one per severity (security.REPORT_SEVERITIES: warning, then the pack's)
    probes: list[SecurityProbe]
    planted_secrets: list[PlantedSecretSummary]
    checks: SecurityChecks


class CaseScoreDocument(TypedDict):
    """One scored case (``CaseScore.as_dict``)."""

    case_key: str
    status: str  # complete | partial (evaluation status)
    run_status: str  # completed | failed | cancelled
    stop_reason: str | None
    strategy: str  # weighted | binary | hybrid
    overall_score: float | None
    passed: bool | None
    overall_reason: str
    validity: str  # valid | degraded | invalid
    validity_reason: str
    warnings: list[str]
    dimensions: dict[str, CaseDimension]
    validator_summary: ValidatorSummary
    validator_details: list[ValidatorDetail]
    metric_summary: dict[str, JSON]  # available metrics: key → value
    metric_details: list[MetricDetail]
    behavioral_signals: list[BehavioralSignalResult]
    llm_judge_details: list[JudgeResult]
    usage: TokenUsage
    cost_usd: float | None
    cost_detail: CostDetail
    latency_ms: float | None
    side_metrics: SideMetrics
    security: SecurityReport | None  # None unless the pack is a security pack
    # "low" when the verdict rests on LLM-judge evidence of low confidence alone (a split vote,
    # disagreeing models): with those dimensions at their best the case would pass. Gates never
    # fail on such a case alone (docs/scorecards-and-gates.md). Older stored documents lack it.
    verdict_confidence: str  # high | low


# -- the lane scorecard (aggregate_lane) ---------------------------------------------------------


class LaneRefs(TypedDict, total=False):
    """Identities the engine cannot know, given by the caller, and the spec's, added by the engine.

    ``aggregate_lane`` always adds the three ``evaluation_spec_*`` keys; comparisons read
    ``lane_id`` and the keys of ``compare.REF_CHECKS``.
    """

    run_id: int | str
    lane_id: int | str
    pack_version_id: int | str | None
    input_set_id: int | str | None
    status: str  # the lane's own status, when the caller knows better (failed)
    failure_reason: str | None
    race_context: bool  # comparisons/services.py's race-context refusals
    evaluation_spec_fingerprint: str
    evaluation_spec_name: str | None
    evaluation_spec_version: int | None


class CaseCounts(TypedDict):
    total: int
    passed: int
    failed: int
    unknown: int
    run_completed: int
    run_failed: int
    run_cancelled: int


class LaneDimension(TypedDict):
    """One dimension over a lane's cases."""

    mean: float | None
    state: str  # available | unavailable | not_applicable | error
    available_count: int
    case_count: int
    better_direction: str  # always "higher"
    declared_direction: str | None
    source: str | None
    reason: str
    # Every case's score of it is low-confidence judge evidence (split votes, disagreeing models):
    # a threshold it crosses warns, never fails (gates.py). Older stored documents lack it.
    low_confidence: NotRequired[bool]


class LatencySummary(TypedDict):
    p50: float | None
    p95: float | None
    mean: float | None


class LaneCaseRow(TypedDict):
    """A case in the lane scorecard (read from its case score document with ``.get``)."""

    case_key: str | None
    overall_score: float | None
    passed: bool | None
    validity: str | None
    run_status: str | None
    stop_reason: str | None
    status: str | None
    overall_reason: str | None
    dimensions: dict[str, float | None]  # key → score
    verdict_confidence: NotRequired[str | None]  # the case score's (high | low); older documents lack it


class RegressionCaseResult(TypedDict):
    """A regression case's result: a validator's :class:`RegressionTag` and its case (``aggregate_lane``)."""

    regression_case_id: str | int
    suite_id: str | int | None
    severity: str  # blocking | warning
    case_key: str | None
    failed: bool


class RegressionCaseRunResult(RegressionCaseResult):
    """A regression case run's result (regression/selectors.py ``lane_regression_entries``), which
    comparisons/services.py adds to a comparison's ``regression``."""

    outcome: str


class LaneFinding(SecurityFinding):
    case_key: str


class SecurityRollup(TypedDict):
    """A lane's security section (``security.security_rollup``)."""

    checked_cases: int
    blocked_cases: list[str]  # case keys
    evidence_missing_cases: NotRequired[list[str]]  # case keys (absent from rollups stored before it)
    passed: bool | None  # None: nothing blocks, but some case's evidence is missing
    counts: dict[str, int]  # one per severity
    kinds: dict[str, int]  # one per finding kind
    probes: dict[str, int]  # probe status → count
    findings: list[LaneFinding]


class ReplaySummary(TypedDict, total=False):
    """What comparisons read of a lane's replay summary; nothing in the engine adds one."""

    counts: dict[str, int]
    terminal_status: str | None


class LaneScorecardDocument(TypedDict):
    """One lane over all its cases (``aggregate_lane``)."""

    schema: str  # lane-scorecard/1
    refs: LaneRefs
    status: str  # completed | failed
    failure_reason: str | None
    strategy: str
    overall_score: float | None
    passed: bool | None
    pass_rate: float | None
    validity: str
    validity_reason: str
    case_counts: CaseCounts
    dimensions: dict[str, LaneDimension]
    cost_usd: float | None
    cost_complete: bool
    latency_ms: LatencySummary
    tokens: TokenUsage
    cases: list[LaneCaseRow]
    regression_cases: list[RegressionCaseResult]
    warnings: list[str]
    security: SecurityRollup | None
    replay_summary: NotRequired[ReplaySummary]  # only when a caller adds one (docs/comparisons.md)
    # Pass rate with its interval, pass@k, flaky cases… over the lane's trials (scoring/services adds it).
    statistics: NotRequired[LaneStatistics]


# -- the run scorecard (rank_lanes) --------------------------------------------------------------


class LaneRanking(TypedDict):
    lane_id: str
    rank: int  # lanes equal on every tie-breaker share a rank (1, 1, 3)
    overall_score: float | None
    pass_rate: float | None
    passed: bool | None
    validity: str | None
    correctness: float | None
    reliability: float | None
    p50_latency_ms: float | None  # median case latency (whole ms): the last tie-breaker, lower wins


class RunScorecardDocument(TypedDict):
    ranking: list[LaneRanking]
    winner_lane_id: str | None
    winner_reason: str
    dimension_deltas_winner_vs_runner_up: dict[str, float | None]
    errored_case_count: NotRequired[int]  # added by scoring/services/scorecards.py when it stores the document


# -- the comparison summary (compare.build_comparison, compare.not_comparable) -------------------


class MatchedParticipants(TypedDict):
    baseline_lane_id: int | str | None
    candidate_lane_id: int | str | None


class DimensionDelta(TypedDict):
    baseline_value: float | None
    candidate_value: float | None
    delta: float | None  # candidate − baseline, when state is available
    better_direction: str  # always "higher"
    declared_direction: str | None
    source: str | None
    state: str  # available | unavailable | not_applicable | error | missing_baseline | missing_candidate
    reason: NotRequired[str]  # unless available or not_applicable: which side lacks it and why
    low_confidence: NotRequired[bool]  # the candidate's value rests on low-confidence judge evidence only


class MetricDelta(TypedDict):
    """Raw numbers for people; gates never read them."""

    baseline: float | None
    candidate: float | None
    better_direction: str  # higher | lower
    delta: float | None


class CaseDivergence(TypedDict):
    passed_to_failed: list[str]
    # The part of passed_to_failed whose candidate verdict rests on low-confidence judge evidence
    # alone (verdict_confidence "low"): gates warn on these, never fail. Older summaries lack it.
    passed_to_failed_low_confidence: NotRequired[list[str]]
    failed_to_passed: list[str]
    completed_to_failed: list[str]
    failed_to_completed: list[str]
    unchanged: int


class FailureDivergence(TypedDict):
    statuses: Sides[str | None]
    failure_reasons: Sides[str | None]
    terminal_replay_statuses: Sides[str | None]
    candidate_failed_baseline_succeeded: bool
    candidate_succeeded_baseline_failed: bool
    both_failed_differently: bool


class EvidenceQuality(TypedDict):
    missing_fields: list[str]
    warnings: list[str]


class SecuritySide(TypedDict):
    counts: dict[str, int] | None
    blocked_cases: list[str] | None
    evidence_missing_cases: NotRequired[list[str] | None]


class SecurityComparison(TypedDict):
    baseline: SecuritySide
    candidate: SecuritySide
    new_findings: list[LaneFinding]  # the candidate's findings the baseline lacks


class ComparisonSummary(TypedDict):
    """A baseline-vs-candidate comparison of two lane scorecards.

    A ``not_comparable`` summary has empty deltas, ``None`` divergences and no
    ``scorecard_validity_reason`` or ``security``; comparisons/services.py may replace
    ``regression`` with the lanes' regression case results.
    """

    schema_version: str
    status: str  # comparable | not_comparable
    reason_code: str | None  # None when comparable (compare.REASON_CODES)
    reason: str
    refs: Sides[LaneRefs]
    matched_participants: list[MatchedParticipants]
    dimension_deltas: dict[str, DimensionDelta]
    metric_deltas: dict[str, MetricDelta]
    scorecard_pass: Sides[bool | None]
    scorecard_validity: Sides[str | None]
    scorecard_validity_reason: NotRequired[Sides[str | None]]
    case_divergence: CaseDivergence | None
    failure_divergence: FailureDivergence | None
    replay_divergence: dict[str, int] | None
    evidence_quality: EvidenceQuality
    regression: Sides[list[RegressionCaseResult] | None] | None
    security: NotRequired[SecurityComparison | None]  # None unless a side is a security pack's
    # Each side's trials by case (comparisons/services.py adds them to a comparable summary): the
    # gate pairs them case by case (gates.trial_statistics).
    trials: NotRequired[Sides[dict[str, TrialColumns]]]
    # A side's trials came in adaptive rounds (stopped when they looked decided): the gate reads
    # them with the sequential test, valid however often they were looked at.
    trials_sequential: NotRequired[bool]
    fingerprint: str


# -- the gate result (gates.evaluate_gate) -------------------------------------------------------


class Thresholds(TypedDict, total=False):
    """A dimension's thresholds on its worsening (−delta); at least one is set."""

    warn_delta: float
    fail_delta: float


class DimensionThresholds(Thresholds):
    thresholds_from: str  # policy | dimension_defaults.<source> | dimension_defaults.*


class RegressionGateRules(TypedDict, total=False):
    no_blocking_regression_failure: bool
    no_new_blocking_failure_vs_baseline: bool
    max_warning_regression_failures: int | None
    suite_ids: list[JSON] | None


class GatePolicy(TypedDict):
    """A normalised gate policy (``gates.normalize_policy``); its fingerprint identifies it."""

    policy_key: str
    policy_version: int
    require_comparable: bool
    require_evidence_quality: bool
    fail_on_candidate_failure: bool
    fail_on_both_failed_differently: bool
    require_scorecard_pass: NotRequired[bool]  # only when true (fingerprints stay stable)
    dimensions: dict[str, Thresholds]
    dimension_defaults: NotRequired[dict[str, Thresholds]]  # dimension source or "*" → thresholds
    max_case_regressions: NotRequired[int]
    required_dimensions: str | list[str]  # "declared", or dimension keys
    regression_gate_rules: NotRequired[RegressionGateRules]
    max_regression: NotRequired[float]  # the tolerated drop of pass rate or score on trials; only when set
    confidence: NotRequired[float]  # of the trials' intervals; only when set


class GateDimensionResult(TypedDict):
    """A dimension's outcome at the gate, with its thresholds when it has some."""

    state: str
    outcome: str  # pass | warn | fail | unavailable | not_applicable
    delta: NotRequired[float]
    worsening: NotRequired[float]
    warn_delta: NotRequired[float]
    fail_delta: NotRequired[float]
    thresholds_from: NotRequired[str]


class TriggeredCondition(TypedDict):
    condition: str
    outcome: str  # fail | warn | insufficient_evidence
    cases: NotRequired[list[str]]  # case regressions and regression rules: the cases


class GateResultDocument(TypedDict):
    verdict: str  # pass | warn | fail | insufficient_evidence
    reason_code: str
    summary: str
    dimension_results: dict[str, GateDimensionResult]
    triggered_conditions: list[TriggeredCondition]
    policy: GatePolicy
    policy_fingerprint: str
    comparison_fingerprint: str | None
    warnings: list[str]
    statistics: NotRequired[GateStatistics | None]  # what the trials said; None: the comparison has no trials


Document = (
    CaseScoreDocument
    | LaneScorecardDocument
    | RunScorecardDocument
    | ComparisonSummary
    | GateResultDocument
    | GatePolicy
    | SecurityFinding
    | JudgeResult
)


def as_json(document: Document) -> JSONObject:
    """A document as a JSON object, for an event payload or another ``dict[str, JSON]``: the same
    dict, not a copy. Every value of these documents is JSON, but mypy reads a TypedDict's values as
    ``object``, so it never takes one for a ``dict[str, JSON]``."""
    return cast(JSONObject, document)
