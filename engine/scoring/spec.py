"""The evaluation spec as scoring reads it (pack-format §4; bundle/schema.py ``EVALUATION_SPEC``).

The bundle decodes ``version.evaluation_spec`` strictly (unknown keys and JSON type mismatches
are errors) and bundle/manifest.py fills a few defaults, so a stored spec has these shapes. Every
key is optional here because the engine tolerates its absence, and its readers stay defensive
(``or []``, ``isinstance``): a spec that did not come through the bundle (tests, old versions)
is scored without raising. Validator ``config`` and judge ``output_schema`` are free-form.
"""

from __future__ import annotations

from typing import TypedDict

from engine.types import JSON


class ValidatorDeclaration(TypedDict, total=False):
    key: str
    type: str
    target: str
    expected_from: str
    config: JSON
    # Not in the pack format: tags a validator as a regression case (docs/comparisons.md).
    regression_case_id: str | int
    regression_suite_id: str | int | None
    regression_severity: str


class MetricDeclaration(TypedDict, total=False):
    key: str
    type: str
    collector: str
    unit: str


class BehavioralSignalDeclaration(TypedDict, total=False):
    key: str
    weight: float
    gate: bool
    pass_threshold: float


class BehavioralConfig(TypedDict, total=False):
    signals: list[BehavioralSignalDeclaration]


class ScoreScale(TypedDict, total=False):
    min: float
    max: float


class JudgeConsensus(TypedDict, total=False):
    aggregation: str
    min_agreement_threshold: float
    flag_on_disagreement: bool


class JudgeDeclaration(TypedDict, total=False):
    key: str
    mode: str  # rubric | assertion | reference | n_wise
    model: str
    models: list[str]
    samples: int
    context_from: list[str]
    output_schema: JSON
    score_scale: ScoreScale
    rubric: str
    assertion: str
    expect: bool
    prompt: str
    position_debiasing: bool
    reference_from: str
    consensus: JudgeConsensus
    anti_gaming_clauses: list[str]
    timeout_ms: int


class PostExecutionCheck(TypedDict, total=False):
    key: str
    type: str  # file_capture | directory_listing
    path: str
    recursive: bool
    max_size_bytes: int


class RuntimeLimits(TypedDict, total=False):
    max_total_tokens: int
    max_cost_usd: float
    max_duration_ms: int
    max_iterations: int


class ModelPrice(TypedDict, total=False):
    """A pricing row; workspace price overrides (``fallback_pricing``) have the same shape."""

    provider_key: str
    provider_model_id: str
    input_cost_per_million_tokens: float
    output_cost_per_million_tokens: float


class PricingConfig(TypedDict, total=False):
    models: list[ModelPrice]


class Normalization(TypedDict, total=False):
    target: float | None
    max: float | None


class DimensionDeclaration(TypedDict, total=False):
    key: str
    source: str
    validators: list[str]
    metric: str
    better_direction: str
    normalization: Normalization
    weight: float
    judge_key: str
    gate: bool
    pass_threshold: float


class LatencyNormalization(TypedDict, total=False):
    target_ms: float
    max_ms: float


class CostNormalization(TypedDict, total=False):
    target_usd: float
    max_usd: float


class ScorecardNormalization(TypedDict, total=False):
    latency: LatencyNormalization
    cost: CostNormalization


class JudgeLimits(TypedDict, total=False):
    max_samples_per_judge: int
    max_calls_usd: float
    max_tokens: int


class ScorecardDeclaration(TypedDict, total=False):
    dimensions: list[str | DimensionDeclaration]  # a bare string is a legacy dimension key
    strategy: str  # weighted | binary | hybrid
    pass_threshold: float
    normalization: ScorecardNormalization
    judge_limits: JudgeLimits


class EvaluationSpec(TypedDict, total=False):
    name: str
    version_number: int
    judge_mode: str  # deterministic | llm_judge | hybrid
    validators: list[ValidatorDeclaration]
    metrics: list[MetricDeclaration] | None  # bundle/manifest.py stores None for "no metrics"
    behavioral: BehavioralConfig
    llm_judges: list[JudgeDeclaration]
    post_execution_checks: list[PostExecutionCheck]
    runtime_limits: RuntimeLimits
    pricing: PricingConfig
    scorecard: ScorecardDeclaration
