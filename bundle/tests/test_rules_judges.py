"""``evaluation_spec.llm_judges`` (spec §4.7): one case per rule, pinning every error of the bundle."""

from __future__ import annotations

from typing import Any

import pytest

from bundle.validate.judges import infer_provider_ok

from .rules import ES, Errors, Mutation, errors_after, spec

J0 = f"{ES}.llm_judges[0]"
PROVIDER = "must be inferable to a known judge provider (claude-*, gpt-*, gemini-*, grok-*, mistral-*, openrouter/* slugs)"
SECRETS = "must not contain ${secrets.*} references; secrets are not allowed in judge prompt text"
ASSERTION: dict[str, Any] = {"key": "j", "mode": "assertion", "assertion": "a", "model": "gpt-4o"}
MODES: dict[str, dict[str, Any]] = {
    "rubric": {"rubric": "r"},
    "assertion": {"assertion": "a"},
    "n_wise": {"prompt": "p"},
    "reference": {"rubric": "r", "reference_from": "case.expectations.answer"},
}


def judges(*declared: dict[str, Any], judge_mode: str = "llm_judge") -> Mutation:
    return lambda b: spec(b).update(judge_mode=judge_mode, llm_judges=list(declared))


def judge(**fields: Any) -> Mutation:
    """One assertion judge with ``fields`` changed; a ``None`` value drops the field."""
    declared = {k: v for k, v in {**ASSERTION, **fields}.items() if v is not None}
    return judges(declared)


def two_models(mode: str, **fields: Any) -> Mutation:
    return judges({"key": "j", "mode": mode, **MODES[mode], "models": ["gpt-4o", "claude-x"], **fields})


RULES = [
    pytest.param(judge(key=" ", mode="vibes", model=None), [(f"{J0}.key", "is required")], id="key required stops the judge"),
    pytest.param(
        judges(ASSERTION, {**ASSERTION, "mode": "vibes"}),
        [(f"{ES}.llm_judges[1].key", "must be unique")],
        id="key unique stops the judge",
    ),
    pytest.param(judge(key="exact", model=None), [(f"{J0}.key", 'collides with validator key "exact"')], id="validator collision"),
    pytest.param(
        lambda b: (
            spec(b).update(metrics=[{"key": "m", "type": "numeric", "collector": "run_total_tokens"}]),
            judge(key="m", model=None)(b),
        ),
        [(f"{J0}.key", 'collides with metric key "m"')],
        id="metric collision",
    ),
    pytest.param(
        judge(mode="vibes", model=None),
        [(f"{J0}.mode", "must be one of rubric, assertion, n_wise, reference")],
        id="mode enum stops the judge",
    ),
    pytest.param(judge(mode="rubric"), [(f"{J0}.rubric", "is required for rubric mode")], id="rubric mode needs rubric"),
    pytest.param(
        judge(mode="reference"),
        [(f"{J0}.rubric", "is required for reference mode"), (f"{J0}.reference_from", "is required for reference mode")],
        id="reference mode needs rubric and reference_from",
    ),
    pytest.param(
        judge(mode="reference", rubric="r", reference_from="case.inputs"),
        [(f"{J0}.reference_from", "must be a supported evidence reference")],
        id="reference_from is an evidence reference",
    ),
    pytest.param(judge(assertion=" "), [(f"{J0}.assertion", "is required for assertion mode")], id="assertion mode needs assertion"),
    pytest.param(judge(mode="n_wise"), [(f"{J0}.prompt", "is required for n_wise mode")], id="n_wise mode needs prompt"),
    pytest.param(
        judge(models=["gpt-4o"]),
        [(f"{J0}.models", "must set exactly one of model or models, not both")],
        id="not both model and models",
    ),
    pytest.param(judge(model=None), [(f"{J0}.model", "must set exactly one of model or models")], id="model or models required"),
    pytest.param(judge(model="llama3"), [(f"{J0}.model", PROVIDER)], id="model provider"),
    pytest.param(
        judge(model=None, models=[" ", "llama3"], consensus={"aggregation": "unanimous"}),
        [(f"{J0}.models[0]", "must be a non-empty model identifier"), (f"{J0}.models[1]", PROVIDER)],
        id="models entries",
    ),
    pytest.param(judge(samples=-1), [(f"{J0}.samples", "must be greater than or equal to 0")], id="samples not negative"),
    pytest.param(judge(samples=11), [(f"{J0}.samples", "must be at most 10")], id="samples at most 10"),
    pytest.param(
        two_models("assertion"),
        [(f"{J0}.consensus", "is required when multiple models are declared")],
        id="consensus required for several models",
    ),
    pytest.param(
        judge(consensus={"aggregation": "unanimous"}),
        [(f"{J0}.consensus", "is only valid when multiple models are declared")],
        id="consensus only for several models",
    ),
    pytest.param(
        two_models("rubric", consensus={"aggregation": "vote"}),
        [(f"{J0}.consensus.aggregation", "must be one of median, mean, majority_vote, unanimous")],
        id="aggregation enum",
    ),
    *[
        pytest.param(
            two_models("assertion", consensus={"aggregation": aggregation}),
            [(f"{J0}.consensus.aggregation", f'"{aggregation}" aggregation is only valid for numeric modes (rubric, reference, n_wise)')],
            id=f"{aggregation} needs a numeric mode",
        )
        for aggregation in ("median", "mean")
    ],
    *[
        pytest.param(
            two_models(mode, consensus={"aggregation": "majority_vote"}),
            [(f"{J0}.consensus.aggregation", "majority_vote aggregation is only valid for assertion mode")],
            id=f"majority_vote not for {mode}",
        )
        for mode in ("rubric", "n_wise", "reference")
    ],
    pytest.param(
        two_models("rubric", consensus={"aggregation": "mean", "min_agreement_threshold": 1.5}),
        [(f"{J0}.consensus.min_agreement_threshold", "must be between 0 and 1")],
        id="agreement threshold range",
    ),
    pytest.param(
        judge(consensus={"aggregation": "vote", "min_agreement_threshold": -1}),
        [
            (f"{J0}.consensus", "is only valid when multiple models are declared"),
            (f"{J0}.consensus.aggregation", "must be one of median, mean, majority_vote, unanimous"),
            (f"{J0}.consensus.min_agreement_threshold", "must be between 0 and 1"),
        ],
        id="a misplaced consensus is still checked",
    ),
    pytest.param(
        judge(context_from=["final_output", "case.inputs"]),
        [(f"{J0}.context_from[1]", "must be a supported evidence reference")],
        id="context_from entries are evidence references",
    ),
    pytest.param(
        judge(output_schema="object"),
        [(f"{J0}.output_schema", "must be valid JSON Schema: jsonschema: invalid schema")],
        id="output_schema is an object or boolean",
    ),
    pytest.param(
        judge(output_schema={"$schema": "http://json-schema.org/draft-04/schema#"}),
        [(f"{J0}.output_schema", "must be valid JSON Schema: unsupported JSON schema draft")],
        id="output_schema draft",
    ),
    pytest.param(
        judge(output_schema={"type": 5}),
        [(f"{J0}.output_schema", "must be valid JSON Schema: jsonschema: /type: 5 is not valid under any of the given schemas")],
        id="output_schema must compile",
    ),
    *[
        pytest.param(judge(mode=mode, **{field: f"use {marker}KEY}}"}), [(f"{J0}.{field}", SECRETS)], id=f"no secrets in {field}")
        for mode, field, marker in (
            ("rubric", "rubric", "${secrets."),
            ("assertion", "assertion", "${ secrets."),
            ("n_wise", "prompt", "${secrets ."),
        )
    ],
    pytest.param(
        judge(rubric="${secrets.A}", prompt="${secrets.B}"),
        [(f"{J0}.rubric", SECRETS), (f"{J0}.prompt", SECRETS)],
        id="secrets are checked in every prompt field whatever the mode",
    ),
    pytest.param(judge(score_scale={"min": 5}), [(f"{J0}.score_scale", "min must be strictly less than max")], id="scale default max"),
    pytest.param(
        judge(score_scale={"min": 2, "max": 2}),
        [(f"{J0}.score_scale", "min must be strictly less than max")],
        id="scale min below max",
    ),
    pytest.param(judge(timeout_ms=0), [(f"{J0}.timeout_ms", "must be greater than 0")], id="timeout positive"),
    pytest.param(
        judges(ASSERTION, judge_mode="deterministic"),
        [(f"{ES}.llm_judges", "must be empty when judge_mode is deterministic")],
        id="deterministic has no judges",
    ),
    *[
        pytest.param(
            judges(judge_mode=mode),
            [(f"{ES}.llm_judges", f"must contain at least one judge when judge_mode is {mode}")],
            id=f"{mode} needs a judge",
        )
        for mode in ("llm_judge", "hybrid")
    ],
]


@pytest.mark.parametrize(("mutate", "expected"), RULES)
def test_it_reports_each_judge_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


ACCEPTED = [
    *[pytest.param(judges({"key": "j", "mode": mode, **fields, "model": "gpt-4o"}), id=f"{mode} mode") for mode, fields in MODES.items()],
    pytest.param(two_models("assertion", consensus={"aggregation": "majority_vote"}), id="majority_vote on assertion"),
    *[
        pytest.param(two_models(mode, consensus={"aggregation": "unanimous", "min_agreement_threshold": 1}), id=f"unanimous on {mode}")
        for mode in MODES
    ],
    pytest.param(two_models("n_wise", consensus={"aggregation": "median"}), id="median on n_wise"),
    pytest.param(judge(output_schema=True), id="boolean schema"),
    pytest.param(
        judge(output_schema={"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
        id="2020-12 schema",
    ),
    pytest.param(judge(samples=10, timeout_ms=1, score_scale={"min": 0, "max": 1}, context_from=["final_output"]), id="limits"),
    pytest.param(judges(judge_mode="deterministic"), id="deterministic without judges"),
]


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_it_accepts_well_formed_judges(mutate: Mutation) -> None:
    assert errors_after(mutate) == []


def test_it_reports_a_judges_problems_in_rule_order() -> None:
    messy = {
        "key": "j",
        "mode": "reference",
        "model": "gpt-4o",
        "models": ["gpt-4o", "claude-x"],
        "samples": 11,
        "consensus": {"aggregation": "majority_vote", "min_agreement_threshold": 2},
        "context_from": ["nowhere"],
        "output_schema": 3,
        "assertion": "${secrets.X}",
        "score_scale": {"max": 1},
        "timeout_ms": -5,
    }
    assert errors_after(judges(messy, judge_mode="deterministic")) == [
        (f"{J0}.rubric", "is required for reference mode"),
        (f"{J0}.reference_from", "is required for reference mode"),
        (f"{J0}.models", "must set exactly one of model or models, not both"),
        (f"{J0}.samples", "must be at most 10"),
        (f"{J0}.consensus.aggregation", "majority_vote aggregation is only valid for assertion mode"),
        (f"{J0}.consensus.min_agreement_threshold", "must be between 0 and 1"),
        (f"{J0}.context_from[0]", "must be a supported evidence reference"),
        (f"{J0}.output_schema", "must be valid JSON Schema: jsonschema: invalid schema"),
        (f"{J0}.assertion", SECRETS),
        (f"{J0}.score_scale", "min must be strictly less than max"),
        (f"{J0}.timeout_ms", "must be greater than 0"),
        (f"{ES}.llm_judges", "must be empty when judge_mode is deterministic"),
    ]


@pytest.mark.parametrize(
    ("model", "inferable"),
    [
        ("claude-sonnet", True),
        ("GPT-4o", True),
        (" o3-mini", True),
        ("o1", True),
        ("o4-mini", True),
        ("text-embedding-3", True),
        ("gemini-2.5", True),
        ("grok-3", True),
        ("mistral-large", True),
        ("meta/llama-3", True),
        ("llama3", False),
        ("claude", False),
    ],
)
def test_it_infers_judge_providers_from_model_names(model: str, inferable: bool) -> None:
    assert infer_provider_ok(model) is inferable
