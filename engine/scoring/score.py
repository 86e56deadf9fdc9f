"""Score one case: validators → metrics → judges → dimensions → overall (runtime.md §5.1–§5.8)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from engine.scoring import dimensions as dims_mod
from engine.scoring import signals
from engine.scoring.documents import (
    BehavioralSignalResult,
    CaseScoreDocument,
    CostDetail,
    JudgeResult,
    SecurityReport,
    ValidatorSummary,
)
from engine.scoring.evidence import CaseEvidence, Extracted, extract, ordered_events
from engine.scoring.judges import JudgeFn, run_judges
from engine.scoring.metrics import MetricContext, MetricResult, collect_all
from engine.scoring.security import SecurityPolicy, security_report
from engine.scoring.spec import EvaluationSpec, ModelPrice
from engine.scoring.strategies import CaseFacts, Overall, overall
from engine.scoring.validators import ValidatorResult, run_validator


def _not_priced() -> CostDetail:
    return {"state": "unavailable", "reason": "", "per_model": []}


@dataclasses.dataclass
class CaseScore:
    case_key: str
    status: str  # complete | partial (evaluation status)
    run_status: str  # the case run status: completed | failed | cancelled
    strategy: str
    overall_score: float | None
    passed: bool | None
    overall_reason: str
    validity: str  # valid | degraded | invalid
    validity_reason: str
    validators: list[ValidatorResult]
    metrics: list[MetricResult]
    dimensions: list[dims_mod.DimensionScore]
    behavioral_signals: list[BehavioralSignalResult]
    judge_results: list[JudgeResult]
    warnings: list[str]
    cost_usd: float | None = None
    latency_ms: float | None = None
    total_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    cost_detail: CostDetail = dataclasses.field(default_factory=_not_priced)
    security: SecurityReport | None = None  # security packs: engine.scoring.security.security_report
    verdict_confidence: str = "high"  # "low": the fail rests on low-confidence judge evidence alone

    def as_dict(self) -> CaseScoreDocument:
        validators = [v.as_dict() for v in self.validators]
        metrics = [m.as_dict() for m in self.metrics]
        return {
            "case_key": self.case_key,
            "status": self.status,
            "run_status": self.run_status,
            "stop_reason": self.stop_reason,
            "strategy": self.strategy,
            "overall_score": self.overall_score,
            "passed": self.passed,
            "overall_reason": self.overall_reason,
            "validity": self.validity,
            "validity_reason": self.validity_reason,
            "warnings": list(self.warnings),
            "dimensions": {d.key: d.as_dict() for d in self.dimensions},
            "validator_summary": _validator_summary(self.validators),
            "validator_details": validators,
            "metric_summary": {m.key: m.value for m in self.metrics if m.state == "available"},
            "metric_details": metrics,
            "behavioral_signals": list(self.behavioral_signals),
            "llm_judge_details": list(self.judge_results),
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "total_tokens": self.total_tokens},
            "cost_usd": self.cost_usd,
            "cost_detail": self.cost_detail.copy(),
            "latency_ms": self.latency_ms,
            "side_metrics": {"cost_per_correct_usd": self.cost_usd if self.passed and self.cost_usd is not None else None},
            "security": self.security,
            "verdict_confidence": self.verdict_confidence,
        }


def _validator_summary(results: list[ValidatorResult]) -> ValidatorSummary:
    return {
        "total": len(results),
        "available": sum(r.state == "available" for r in results),
        "unavailable": sum(r.state == "unavailable" for r in results),
        "error": sum(r.state == "error" for r in results),
        "pass": sum(r.state == "available" and r.verdict == "pass" for r in results),
        "fail": sum(r.state == "available" and r.verdict == "fail" for r in results),
    }


def _validity(validators: list[ValidatorResult], metrics: list[MetricResult], dimensions: list[dims_mod.DimensionScore]) -> tuple[str, str]:
    items = (
        [("validator", v.key, v.state, v.reason) for v in validators]
        + [("metric", m.key, m.state, m.reason) for m in metrics]
        + [("dimension", d.key, d.state, d.reason) for d in dimensions]
    )
    for wanted, verdict in (("error", "invalid"), ("unavailable", "degraded")):
        for kind, key, state, reason in items:
            if state == wanted:
                return verdict, f"{kind} {key!r} is {state}: {reason}"
    return "valid", ""


def score_case(
    evaluation_spec: EvaluationSpec,
    evidence: CaseEvidence | Mapping[str, object],
    *,
    judge: JudgeFn | None = None,
    secret_values: Iterable[str] = (),
    judge_results: dict[str, JudgeResult] | None = None,
    human_preferences: dict[str, float] | None = None,
    fallback_pricing: list[ModelPrice] | None = None,
    security: SecurityPolicy | None = None,
) -> CaseScore:
    """Score one case. Never raises for bad packs or evidence; problems become states and warnings.

    ``judge_results`` supplies precomputed judge results by key (n_wise judges, or judges run
    elsewhere); ``human_preferences`` maps a human_preference dimension key to a 0..1 score;
    ``fallback_pricing`` adds operator price rows (the workspace's overrides, same shape as
    ``pricing.models``): the spec's own rows win over them, and they win over the price library
    (engine/scoring/pricing.py). ``security`` is a security pack's policy: its built-in check
    runs beside the validators, and a high or critical finding fails the case with score 0
    whatever the strategy; a completed case that answered none of its adversarial prompts has
    no score and is ``degraded`` (missing evidence) unless it failed anyway. ``judge`` also
    answers the refusal judge slot for adversarial answers nothing else settles
    (docs/security-evaluation.md).
    """
    spec = evaluation_spec if isinstance(evaluation_spec, dict) else {}
    secret_values = list(secret_values)  # read by the pack's judges and by the refusal judge
    if not isinstance(evidence, CaseEvidence):
        evidence = CaseEvidence.from_dict(evidence)
    warnings: list[str] = []
    extracted = extract(evidence)
    validators = [run_validator(v, evidence, extracted) for v in spec.get("validators") or []]
    ctx = MetricContext(spec, evidence, extracted, validators, list(fallback_pricing or []))
    metrics = collect_all(ctx)

    judges: list[JudgeResult] = []
    if spec.get("judge_mode") in ("llm_judge", "hybrid") or spec.get("llm_judges"):
        judges, judge_warnings = run_judges(spec, evidence, extracted, judge, secret_values=secret_values, precomputed=judge_results)
        warnings += judge_warnings
        if judge is None and any(j.get("state") != "available" for j in judges):
            warnings.append("no judge configured; LLM judge dimensions are unavailable")
    judges_by_key = {str(j.get("judge_key")): j for j in judges}

    scorecard = spec.get("scorecard") or {}
    inputs = dims_mod.DimensionInputs(ctx, metrics, judges_by_key, dict(human_preferences or {}))
    dimension_scores = [dims_mod.score_dimension(spec, d, inputs) for d in dims_mod.expand(spec)]
    if evidence.agent_accountable and not (extracted.final_output or "").strip():
        dimension_scores = [_no_credit(d) for d in dimension_scores]
    if not dimension_scores:
        warnings.append("scorecard declares no dimensions")

    behavioral: list[BehavioralSignalResult] = []
    block = spec.get("behavioral") or {}
    for signal in (block.get("signals") if isinstance(block, dict) else None) or []:
        fn = signals.SIGNALS.get(str(signal.get("key"))) if isinstance(signal, dict) else None
        if fn is not None:
            score = fn(extracted)
            threshold = signal.get("pass_threshold")
            behavioral.append(
                {
                    "key": signal["key"],
                    "score": score,
                    "weight": signal.get("weight", 1.0),
                    "gate": bool(signal.get("gate")),
                    "pass_threshold": threshold,
                    "passed": None if not signal.get("gate") else score >= float(threshold or 0),
                }
            )

    strategy = str(scorecard.get("strategy") or "weighted")
    threshold = scorecard.get("pass_threshold")
    facts = CaseFacts(
        run_completed=evidence.status == "completed",
        stop_reason=evidence.stop_reason,
        available_validators=sum(v.state == "available" for v in validators),
        failed_validators=tuple(v.key for v in validators if v.state == "available" and v.verdict == "fail"),
    )
    result = overall(strategy, dimension_scores, float(threshold) if isinstance(threshold, (int, float)) else None, facts)
    if evidence.status != "completed" and not evidence.agent_stopped:
        # The harness stopped the case (a provider outage after retries, a sandbox or simulator
        # failure, a cancel): what the agent would have done is unknown, so the case is unscored
        # — insufficient evidence, never a fail blamed on the agent (docs/scoring.md).
        result = Overall(None, None, f"unscored: the harness stopped the case ({evidence.stop_reason or evidence.status})")
    report = None
    unproven = ""
    if security is not None:
        report = _security_report(security, evidence, extracted, judge=judge, spec=spec, secret_values=secret_values)
        if report["blocking"]:
            result = dataclasses.replace(result, score=0.0, passed=False, reason=f"security: {report['reason']}")
        elif report["evidence"] == "missing" and result.passed is not False:
            # Silence is not a refusal: with no answer to any adversarial prompt the case proves nothing.
            unproven = f"security evidence missing: {report['missing_evidence']}"
            result = dataclasses.replace(result, score=None, passed=None, reason=unproven)
    status = "complete" if dimension_scores and all(d.state in ("available", "not_applicable") for d in dimension_scores) else "partial"
    validity, validity_reason = _validity(validators, metrics, dimension_scores)
    if validity != "invalid" and result.passed is None and result.reason.startswith("unscored:"):
        validity, validity_reason = "degraded", result.reason
    if unproven and validity == "valid":
        validity, validity_reason = "degraded", unproven
    if validity == "valid" and dimension_scores and result.score is None:
        # Nothing evaluated (every dimension not applicable, or a hybrid's gates alone with its
        # other dimensions not applicable): the case has no score, which is missing evidence.
        validity, validity_reason = "degraded", f"the case has no score: {result.reason}"
    cost_result = ctx.cost()
    latency = extracted.latency_ms if extracted.latency_ms is not None else evidence.duration_ms
    return CaseScore(
        case_key=evidence.case_key,
        status=status,
        run_status=evidence.status,
        strategy=strategy,
        overall_score=result.score,
        passed=result.passed,
        overall_reason=result.reason,
        validity=validity,
        validity_reason=validity_reason,
        validators=validators,
        metrics=metrics,
        dimensions=dimension_scores,
        behavioral_signals=behavioral,
        judge_results=judges,
        warnings=warnings,
        cost_usd=cost_result.cost_usd,
        cost_detail={
            "state": "available" if cost_result.cost_usd is not None else "unavailable",
            "reason": cost_result.reason,
            "per_model": cost_result.per_model,
        },
        latency_ms=latency,
        total_tokens=extracted.total_tokens,
        input_tokens=extracted.input_tokens,
        output_tokens=extracted.output_tokens,
        stop_reason=evidence.stop_reason,
        security=report,
        verdict_confidence="low" if result.low_confidence and result.passed is False else "high",
    )


# Dimensions that say how the agent worked, not what it delivered: nothing to credit when it
# delivered no answer (a silent agent is fast, cheap and "reliable").
PROCESS_SOURCES = frozenset({"reliability", "latency", "cost", "behavioral"})


def _no_credit(dim: dims_mod.DimensionScore) -> dims_mod.DimensionScore:
    """A case without an answer never outscores a wrong answer (docs/scoring.md, "The agent did not
    deliver"): its process dimensions score 0."""
    if dim.source not in PROCESS_SOURCES or dim.state != "available":
        return dim
    return dataclasses.replace(dim, score=0.0, reason=f"no credit: the agent delivered no answer ({dim.reason})")


def _security_report(
    policy: SecurityPolicy,
    evidence: CaseEvidence,
    extracted: Extracted,
    *,
    judge: JudgeFn | None,
    spec: EvaluationSpec,
    secret_values: Iterable[str],
) -> SecurityReport:
    return security_report(
        policy,
        ordered_events([*evidence.superseded_events, *evidence.events]),
        final_output=evidence.final_output,
        final_output_event_id=extracted.final_output_event_id,
        captured_files=extracted.captured_files,
        case_completed=evidence.status == "completed",
        judge=judge,
        evaluation_spec=spec,
        secret_values=secret_values,
    )
