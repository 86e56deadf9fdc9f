"""The stored documents have exactly the keys of their TypedDicts (engine/scoring/documents.py).

Each document is built by its real producer, with inputs that bring out its optional parts, and
walked against its type: every TypedDict on the way must have all its required keys and no key
it does not declare, and every value must be of the declared type. A producer that adds, drops or
renames a key (or a TypedDict that drifts from it) fails here.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, NotRequired, TypedDict, Union, cast

import pytest

from engine.scoring import aggregate_lane, rank_lanes, score_case
from engine.scoring import documents as d
from engine.scoring.compare import build_comparison, not_comparable
from engine.scoring.gates import DEFAULT_POLICY, evaluate_gate, normalize_policy
from engine.scoring.judges import run_nwise_judge
from engine.tests.scoring.helpers import FakeJudge, evidence, run_events, spec
from engine.tests.scoring.test_security import CANARY, POLICY, answer_events
from engine.types import JSON


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def problems(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Where ``value`` is not a ``tp`` (empty when it is)."""
    if tp is Any or tp == JSON:
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            return [f"{path}: not JSON ({exc})"]
        return []
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        found = [problems(value, arm, path) for arm in args]
        return [] if any(not p for p in found) else [f"{path}: {value!r} is none of {tp}: {found}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: {value!r} is not None"]
    if _is_typeddict(origin or tp):
        return _typeddict_problems(value, origin or tp, args, path)
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, args[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        return [p for k, item in value.items() for p in problems(k, args[0], f"{path}.<key>") + problems(item, args[1], f"{path}.{k}")]
    expected = (int, float) if tp is float else tp
    return [] if isinstance(value, expected) else [f"{path}: {value!r} is not a {tp.__name__}"]


def _typeddict_problems(value: Any, td: Any, args: tuple[Any, ...], path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: {value!r} is not a {td.__name__}"]
    required, optional = set(td.__required_keys__), set(td.__optional_keys__)
    missing, unknown = sorted(required - set(value)), sorted(set(value) - required - optional)
    out = [f"{path}: {td.__name__} lacks {missing}"] if missing else []
    out += [f"{path}: {td.__name__} has no key {unknown}"] if unknown else []
    hints = typing.get_type_hints(td)
    bound = dict(zip(getattr(td, "__parameters__", ()), args, strict=False))  # Sides[T]
    for key in sorted(set(value) & set(hints)):
        out += problems(value[key], bound.get(hints[key], hints[key]), f"{path}.{key}")
    return out


def check(value: Any, td: Any) -> None:
    assert problems(value, td) == []


# -- the checker checks -------------------------------------------------------------------------------


class _Inner(TypedDict):
    n: int


class _Outer(TypedDict):
    inner: _Inner
    maybe: NotRequired[str | None]


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ({"inner": {"n": 1}, "extra": 1}, "has no key ['extra']"),
        ({"maybe": None}, "lacks ['inner']"),
        ({"inner": {"n": "1"}}, "'1' is not a int"),
        ({"inner": {}}, "$.inner: _Inner lacks ['n']"),
    ],
)
def test_the_checker_finds_missing_unknown_and_mistyped_keys(value: Any, complaint: str) -> None:
    assert complaint in " ".join(problems(value, _Outer))
    assert problems({"inner": {"n": 1}, "maybe": None}, _Outer) == []


def test_every_document_type_states_its_keys_at_run_time() -> None:
    # NotRequired is seen at run time only without postponed annotations (documents.py says why).
    assert d.CaseScoreDocument.__optional_keys__ == frozenset()
    assert d.JudgePayload.__optional_keys__ == {"model_scores", "aggregated_score"}
    assert d.ComparisonSummary.__optional_keys__ == {"scorecard_validity_reason", "security", "trials", "trials_sequential"}
    assert "pass" in d.ValidatorSummary.__required_keys__


# -- the documents --------------------------------------------------------------------------------------

JUDGE_REPLY = json.dumps({"score": 4, "confidence": "high", "reasoning": "fine"})
SPEC = spec(
    validators=[
        {"key": "answer", "type": "exact_match", "target": "final_output", "expected_from": "literal:42"},
        {
            "key": "tagged",
            "type": "contains",
            "target": "final_output",
            "expected_from": "literal:4",
            "regression_case_id": "rc-1",
            "regression_suite_id": 7,
        },
        {"key": "missing", "type": "contains", "target": "file:nope", "expected_from": "literal:x"},
    ],
    dimensions=[
        "correctness",
        "reliability",
        {"key": "latency", "source": "latency", "better_direction": "lower", "normalization": {"target": 1000, "max": 5000}},
        {"key": "cost", "source": "cost", "better_direction": "lower", "normalization": {"target": 0.0, "max": 1.0}},
        {"key": "tokens", "source": "metric", "metric": "tokens", "better_direction": "lower", "normalization": {"target": 0, "max": 9000}},
        {"key": "recovery", "source": "behavioral"},
        {"key": "quality", "source": "llm_judge", "judge_key": "quality"},
        {"key": "rank", "source": "llm_judge", "judge_key": "rank"},
    ],
    metrics=[
        {"key": "tokens", "type": "numeric", "collector": "run_total_tokens", "unit": "tokens"},
        {"key": "completed", "type": "boolean", "collector": "run_completed_successfully"},
        {"key": "ttft", "type": "numeric", "collector": "run_ttft_ms"},
        {"key": "broken", "type": "numeric", "collector": "nope"},
    ],
    behavioral={"signals": [{"key": "recovery_behavior", "weight": 2.0, "gate": True, "pass_threshold": 0.5}]},
    judge_mode="hybrid",
    llm_judges=[
        {
            "key": "quality",
            "mode": "rubric",
            "models": ["gpt-4o", "claude-x"],
            "samples": 2,
            "context_from": ["final_output"],
            "rubric": "r",
        },
        {"key": "rank", "mode": "n_wise", "model": "gpt-4o", "samples": 1, "context_from": ["final_output"], "prompt": "rank"},
        {"key": "raises", "mode": "rubric", "model": "gpt-4o", "samples": "many", "context_from": ["final_output"]},
    ],
)


def case_document(case_key: str, answer: str, *, fallback_model: bool = False) -> d.CaseScoreDocument:
    events = answer_events(answer).items if fallback_model else run_events(answer).items
    ranks = run_nwise_judge(
        SPEC, "rank", [("a", evidence(answer)), ("b", evidence("other"))], FakeJudge([json.dumps({"ranking": ["a", "b"]})])
    )
    result = score_case(
        SPEC,
        evidence(answer, case_key=case_key, events=events, model="gpt-4o", duration_ms=1500.0),
        judge=FakeJudge({"gpt-4o": [JUDGE_REPLY], "claude-x": ["RAISE", JUDGE_REPLY]}),
        judge_results={"rank": ranks["a"]},
        security=POLICY,
    )
    return result.as_dict()


CASES = [case_document("c1", "42"), case_document("c2", f"leaked {CANARY}", fallback_model=True)]


def lane(lane_id: int, cases: list[d.CaseScoreDocument], evaluation_spec: Any = SPEC) -> d.LaneScorecardDocument:
    refs: d.LaneRefs = {"run_id": 1, "lane_id": lane_id, "pack_version_id": 3, "input_set_id": 4, "status": "completed"}
    return aggregate_lane(evaluation_spec, cases, refs=refs)


def test_the_inputs_bring_out_the_optional_parts() -> None:
    first, second = CASES
    judges = {j["judge_key"]: j for j in first["llm_judge_details"]}
    assert judges["raises"]["state"] == "error" and "model_scores" not in judges["raises"]["payload"]
    assert isinstance(judges["rank"]["payload"]["calls"][0]["score"], dict)
    assert "input_tokens" in first["cost_detail"]["per_model"][0]
    assert "input_tokens" not in second["cost_detail"]["per_model"][0]
    assert second["security"] is not None and second["security"]["findings"]
    assert first["validator_details"][1]["regression"] is not None


@pytest.mark.parametrize("index", [0, 1])
def test_a_case_score_document_has_exactly_its_keys(index: int) -> None:
    check(CASES[index], d.CaseScoreDocument)


def test_a_lane_scorecard_has_exactly_its_keys() -> None:
    card = lane(1, CASES)
    assert card["security"] is not None and card["regression_cases"]
    check(card, d.LaneScorecardDocument)


def test_a_run_scorecard_has_exactly_its_keys() -> None:
    check(rank_lanes({"1": lane(1, CASES), "2": lane(2, CASES[:1] + [case_document("c2", "41")])}), d.RunScorecardDocument)


def test_a_comparison_summary_has_exactly_its_keys() -> None:
    baseline, candidate = lane(1, [case_document("c1", "42"), case_document("c2", "41")]), lane(2, CASES)
    summary = build_comparison(baseline, candidate)
    assert summary["status"] == "comparable" and summary["security"] is not None and summary["security"]["new_findings"]
    check(summary, d.ComparisonSummary)
    check(build_comparison(baseline, lane(3, CASES[:1])), d.ComparisonSummary)  # coverage differs
    check(not_comparable("participant_count_mismatch", "pick lanes", None, {"refs": {"run_id": 2}}), d.ComparisonSummary)


def test_a_gate_result_and_its_policy_have_exactly_their_keys() -> None:
    summary = build_comparison(lane(1, [case_document("c1", "42"), case_document("c2", "41")]), lane(2, CASES))
    policy = {
        "policy_key": "Custom",
        "require_scorecard_pass": True,
        "require_evidence_quality": False,
        "required_dimensions": ["correctness"],
        "dimensions": {"correctness": {"warn_delta": 0.01}, "latency": {"fail_delta": 0.5}},
        "dimension_defaults": {"*": {"warn_delta": 0.02, "fail_delta": 0.05}},
        "max_case_regressions": 0,
        "regression_gate_rules": {"no_blocking_regression_failure": True, "suite_ids": [7]},
    }
    normalized = normalize_policy(policy)
    check(normalized, d.GatePolicy)
    check(DEFAULT_POLICY, d.GatePolicy)
    gated = evaluate_gate(summary, policy)
    assert any("cases" in t for t in gated["triggered_conditions"])
    check(gated, d.GateResultDocument)
    # Valid scorecards reach the thresholds: dimension results with deltas, a case regression.
    plain = spec(dimensions=["correctness", "reliability"])
    baseline = lane(1, [score_case(plain, evidence("42", case_key=k)).as_dict() for k in ("a", "b")], plain)
    candidate = lane(2, [score_case(plain, evidence(out, case_key=k)).as_dict() for k, out in (("a", "42"), ("b", "41"))], plain)
    thresholds = evaluate_gate(build_comparison(baseline, candidate))
    assert thresholds["verdict"] == "fail" and thresholds["dimension_results"]["correctness"]["worsening"] == 0.5
    assert any(t.get("cases") == ["b"] for t in thresholds["triggered_conditions"])
    check(thresholds, d.GateResultDocument)
    relaxed = {**policy, "require_scorecard_pass": False, "regression_gate_rules": None, "required_dimensions": "declared"}
    check(evaluate_gate(build_comparison(baseline, candidate), relaxed), d.GateResultDocument)


def test_as_json_is_the_document_itself() -> None:
    document = CASES[0]
    assert d.as_json(document) is cast(object, document)
