"""``evaluation_spec.scorecard`` (spec §4.8): one case per rule, pinning every error of the bundle."""

from __future__ import annotations

from typing import Any

import pytest

from bundle.validate.scorecard import expand_dimension

from .rules import ES, Errors, Mutation, errors_after, spec

SC = f"{ES}.scorecard"
D0 = f"{SC}.dimensions[0]"
NORM = {"target": 0.5, "max": 1.0}
METRICS: dict[str, Any] = {"metrics": [{"key": "tokens", "type": "numeric", "collector": "run_total_tokens"}]}
JUDGED: dict[str, Any] = {"judge_mode": "llm_judge", "llm_judges": [{"key": "j", "mode": "assertion", "assertion": "a", "model": "gpt-4o"}]}


def scorecard(**fields: Any) -> Mutation:
    return lambda b: spec(b)["scorecard"].update(fields)


def dims(*dimensions: Any, **fields: Any) -> Mutation:
    return scorecard(dimensions=list(dimensions), **fields)


def with_spec(mutate: Mutation, **fields: Any) -> Mutation:
    def both(b: dict[str, Any]) -> None:
        spec(b).update(fields)
        mutate(b)

    return both


RULES = [
    pytest.param(dims(), [(f"{SC}.dimensions", "must contain at least one dimension")], id="dimensions required"),
    pytest.param(scorecard(strategy="ranked"), [(f"{SC}.strategy", "must be one of weighted, binary, hybrid")], id="strategy enum"),
    pytest.param(dims({"key": " ", "source": "reliability"}), [(f"{D0}.key", "is required")], id="key required"),
    pytest.param(
        dims("correctness", {"key": "correctness", "weight": -1, "pass_threshold": 2}),
        [(f"{SC}.dimensions[1]", "must be unique")],
        id="duplicate key stops the dimension's checks",
    ),
    pytest.param(
        dims("style"),
        [(f"{D0}.source", "must be one of validators, metric, reliability, latency, cost, behavioral, llm_judge")],
        id="unknown legacy key has no source",
    ),
    pytest.param(
        dims({"key": "s", "source": "vibes"}),
        [(f"{D0}.source", "must be one of validators, metric, reliability, latency, cost, behavioral, llm_judge")],
        id="source enum",
    ),
    pytest.param(
        dims({"key": "c", "source": "validators", "validators": ["exact", "nope"]}),
        [(f"{D0}.validators[1]", 'references unknown validator key "nope"')],
        id="validators must be declared",
    ),
    pytest.param(
        dims({"key": "m", "source": "metric", "better_direction": "lower", "normalization": NORM}),
        [(f"{D0}.metric", "is required when source is metric")],
        id="metric required",
    ),
    pytest.param(
        dims({"key": "m", "source": "metric", "metric": "nope", "better_direction": "lower", "normalization": NORM}),
        [(f"{D0}.metric", 'references unknown metric key "nope"')],
        id="metric must be declared",
    ),
    pytest.param(
        dims("behavioral", {"key": "b2", "source": "behavioral"}),
        [(f"{ES}.behavioral", "is required when a scorecard dimension uses source behavioral")],
        id="behavioral block required once",
    ),
    pytest.param(
        dims({"key": "j", "source": "llm_judge"}),
        [(f"{D0}.judge_key", "is required when source is llm_judge")],
        id="judge_key required",
    ),
    pytest.param(
        dims({"key": "j", "source": "llm_judge", "judge_key": "nope"}),
        [(f"{D0}.judge_key", 'references unknown judge key "nope"')],
        id="judge_key must be declared",
    ),
    *[
        pytest.param(
            with_spec(dims({"key": "d", "source": source, "better_direction": "lower", **extra}), **spec_fields),
            [(f"{D0}.better_direction", f'must be "higher" for {source} source (got "lower")')],
            id=f"{source} is higher-only",
        )
        for source, extra, spec_fields in (
            ("validators", {}, {}),
            ("reliability", {}, {}),
            ("behavioral", {}, {"behavioral": {"signals": [{"key": "recovery_behavior", "weight": 1}]}}),
            ("llm_judge", {"judge_key": "j"}, JUDGED),
        )
    ],
    pytest.param(
        dims({"key": "l", "source": "latency", "better_direction": "sideways", "normalization": NORM}),
        [(f"{D0}.better_direction", "must be higher or lower")],
        id="latency direction enum",
    ),
    pytest.param(
        with_spec(dims({"key": "m", "source": "metric", "metric": "tokens", "normalization": NORM}), **METRICS),
        [(f"{D0}.better_direction", "must be higher or lower")],
        id="metric direction has no default",
    ),
    pytest.param(
        dims({"key": "correctness", "judge_key": "j"}),
        [(f"{D0}.judge_key", "must be empty unless source is llm_judge")],
        id="judge_key only for llm_judge",
    ),
    *[
        pytest.param(
            with_spec(dims({"key": "d", "source": source, "metric": "tokens", "better_direction": "lower"}), **METRICS),
            [(f"{D0}.normalization", f"is required when source is {source}")],
            id=f"{source} needs normalization",
        )
        for source in ("metric", "latency", "cost")
    ],
    pytest.param(
        dims({"key": "c", "source": "cost", "better_direction": "lower", "normalization": {}}),
        [(f"{D0}.normalization.target", "is required"), (f"{D0}.normalization.max", "is required")],
        id="normalization target and max required",
    ),
    pytest.param(
        dims({"key": "c", "source": "cost", "better_direction": "lower", "normalization": {"target": 1, "max": 1}}),
        [(f"{D0}.normalization.max", "must be greater than target when better_direction is lower")],
        id="lower needs max above target",
    ),
    pytest.param(
        dims({"key": "c", "source": "cost", "better_direction": "higher", "normalization": {"target": 1, "max": 1}}),
        [(f"{D0}.normalization.max", "must be less than target when better_direction is higher")],
        id="higher needs max below target",
    ),
    pytest.param(
        dims({"key": "correctness", "weight": -0.5}),
        [(f"{D0}.weight", "must be greater than or equal to 0")],
        id="weight not negative",
    ),
    pytest.param(
        dims({"key": "correctness", "gate": True}),
        [(f"{D0}.pass_threshold", "is required when the dimension is gated or strategy is binary")],
        id="gated dimension needs a threshold",
    ),
    pytest.param(
        dims("correctness", strategy="binary"),
        [(f"{D0}.pass_threshold", "is required when the dimension is gated or strategy is binary")],
        id="binary strategy needs dimension thresholds",
    ),
    pytest.param(
        dims({"key": "correctness", "pass_threshold": 1.5}),
        [(f"{D0}.pass_threshold", "must be between 0 and 1")],
        id="dimension threshold range",
    ),
    pytest.param(
        dims({"key": "correctness", "pass_threshold": 1}, strategy="binary", pass_threshold=0.5),
        [(f"{SC}.pass_threshold", "must not be set for binary strategy; use per-dimension pass_threshold instead")],
        id="no overall threshold for binary",
    ),
    pytest.param(
        scorecard(pass_threshold=-0.1),
        [(f"{SC}.pass_threshold", "must be between 0 and 1")],
        id="overall threshold range",
    ),
    pytest.param(
        scorecard(strategy="hybrid"),
        [(f"{SC}.strategy", "hybrid strategy requires at least one gated dimension")],
        id="hybrid needs a gate",
    ),
    pytest.param(
        scorecard(judge_limits={"max_samples_per_judge": 11}),
        [(f"{SC}.judge_limits.max_samples_per_judge", "must be between 0 and 10")],
        id="judge samples limit range",
    ),
    pytest.param(
        scorecard(judge_limits={"max_calls_usd": -1}),
        [(f"{SC}.judge_limits.max_calls_usd", "must be greater than or equal to 0")],
        id="judge cost limit not negative",
    ),
    pytest.param(
        scorecard(judge_limits={"max_tokens": -1}),
        [(f"{SC}.judge_limits.max_tokens", "must be greater than or equal to 0")],
        id="judge token limit not negative",
    ),
    pytest.param(
        with_spec(dims("correctness", "latency"), runtime_limits={"max_duration_ms": 1000}),
        [(f"{SC}.dimensions[1].normalization", "is required when source is latency")],
        id="legacy latency without a legacy block has no normalization",
    ),
    pytest.param(
        dims("latency", normalization={"latency": {"target_ms": 100}}),
        [(f"{D0}.normalization.max", "is required")],
        id="legacy latency block without max or fallback",
    ),
    pytest.param(
        dims("cost", normalization={"cost": {"target_usd": 1, "max_usd": 0.5}}),
        [(f"{D0}.normalization.max", "must be greater than target when better_direction is lower")],
        id="legacy cost block keeps its max",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), RULES)
def test_it_reports_each_scorecard_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


ACCEPTED = [
    pytest.param(dims({"key": "h", "source": "human_preference"}), id="human_preference source"),
    pytest.param(dims({"key": "c", "source": "validators"}), id="validators source with every validator"),
    pytest.param(dims({"key": "r", "source": "reliability", "better_direction": "higher"}), id="explicit higher"),
    pytest.param(
        with_spec(dims("latency", normalization={"latency": {"target_ms": 100}}), runtime_limits={"max_duration_ms": 1000}),
        id="legacy latency max from runtime limits",
    ),
    pytest.param(
        dims("cost", normalization={"cost": {"target_usd": 0.1, "max_usd": 1}}),
        id="legacy cost block",
    ),
    pytest.param(
        with_spec(dims({"key": "j", "source": "llm_judge", "judge_key": "j"}), **JUDGED),
        id="llm_judge source with a declared judge",
    ),
    pytest.param(
        with_spec(
            dims({"key": "m", "source": "metric", "metric": "tokens", "better_direction": "lower", "normalization": NORM}), **METRICS
        ),
        id="metric source with a declared metric",
    ),
    pytest.param(
        dims({"key": "correctness", "gate": True, "pass_threshold": 1}, strategy="hybrid", pass_threshold=0.5),
        id="hybrid with a gate",
    ),
    pytest.param(scorecard(judge_limits={"max_samples_per_judge": 0, "max_calls_usd": 0, "max_tokens": 0}), id="zero judge limits"),
]


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_it_accepts_well_formed_scorecards(mutate: Mutation) -> None:
    assert errors_after(mutate) == []


def test_it_reports_a_dimensions_problems_in_rule_order() -> None:
    messy = {
        "key": "m",
        "source": "metric",
        "metric": "nope",
        "better_direction": "up",
        "judge_key": "j",
        "weight": -1,
        "pass_threshold": 2,
    }
    assert errors_after(dims(messy, strategy="hybrid", pass_threshold=3, judge_limits={"max_samples_per_judge": -1, "max_tokens": -1})) == [
        (f"{D0}.metric", 'references unknown metric key "nope"'),
        (f"{D0}.better_direction", "must be higher or lower"),
        (f"{D0}.judge_key", "must be empty unless source is llm_judge"),
        (f"{D0}.normalization", "is required when source is metric"),
        (f"{D0}.weight", "must be greater than or equal to 0"),
        (f"{D0}.pass_threshold", "must be between 0 and 1"),
        (f"{SC}.pass_threshold", "must be between 0 and 1"),
        (f"{SC}.strategy", "hybrid strategy requires at least one gated dimension"),
        (f"{SC}.judge_limits.max_samples_per_judge", "must be between 0 and 10"),
        (f"{SC}.judge_limits.max_tokens", "must be greater than or equal to 0"),
    ]


def test_it_reports_the_scorecard_header_before_its_dimensions() -> None:
    assert errors_after(dims("style", "correctness", "style", strategy="nope")) == [
        (f"{SC}.strategy", "must be one of weighted, binary, hybrid"),
        (f"{D0}.source", "must be one of validators, metric, reliability, latency, cost, behavioral, llm_judge"),
        (f"{SC}.dimensions[2]", "must be unique"),
    ]


@pytest.mark.parametrize(
    ("dimension", "extra", "expanded"),
    [
        ("correctness", {}, {"key": "correctness", "source": "validators", "better_direction": "higher"}),
        ("reliability", {}, {"key": "reliability", "source": "reliability", "better_direction": "higher"}),
        ("behavioral", {}, {"key": "behavioral", "source": "behavioral", "better_direction": "higher"}),
        ("latency", {}, {"key": "latency", "source": "latency", "better_direction": "lower"}),
        (
            "latency",
            {"scorecard": {"normalization": {"latency": {"target_ms": 10}}}, "runtime_limits": {"max_duration_ms": 99}},
            {"key": "latency", "source": "latency", "better_direction": "lower", "normalization": {"target": 10, "max": 99}},
        ),
        (
            "cost",
            {"scorecard": {"normalization": {"cost": {"max_usd": 2}}}, "runtime_limits": {"max_cost_usd": 9}},
            {"key": "cost", "source": "cost", "better_direction": "lower", "normalization": {"max": 2}},
        ),
        (
            {"key": "cost", "better_direction": "higher", "normalization": {"target": 1}},
            {"scorecard": {"normalization": {"cost": {"max_usd": 2}}}},
            {"key": "cost", "source": "cost", "better_direction": "higher", "normalization": {"target": 1}},
        ),
        ({"key": "j", "source": "llm_judge"}, {}, {"key": "j", "source": "llm_judge", "better_direction": "higher"}),
        ({"key": "m", "source": " metric "}, {}, {"key": "m", "source": "metric"}),
        ("style", {}, {"key": "style", "source": ""}),
    ],
)
def test_it_expands_legacy_and_source_less_dimensions(dimension: Any, extra: dict[str, Any], expanded: dict[str, Any]) -> None:
    assert expand_dimension(dimension, extra) == expanded


def test_expanding_a_dimension_leaves_the_declaration_alone() -> None:
    declared = {"key": "reliability"}
    expand_dimension(declared, {})
    assert declared == {"key": "reliability"}
