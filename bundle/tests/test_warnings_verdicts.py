"""Checks that can never pass, thresholds no score can reach, and validators that can fail without
failing the case although the instructions make them mandatory (issue 22 item 9). Every warning
of each bundle is pinned."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bundle import process_bundle

from .conftest import BASE
from .rules import ES, Mutation, spec

Warnings = list[tuple[str, str]]
CARD = f"{ES}.scorecard"
OBJECT = 'literal:{"type": "object", "required": ["summary"]}'
EVERY = "a weighted scorecard with no gate and no pass_threshold needs every validator to pass"
NEVER_MATCHES = (
    "can never match any text (an anchor such as ^, $, \\A or \\z stands where the text cannot start or end, or a character class "
    "holds no character): this validator can never pass"
)
GATE_IT = "For a mandatory check to fail the case, put its validator in a dimension with gate: true and pass_threshold: 1"


def warnings_after(*mutations: Mutation) -> Warnings:
    b = copy.deepcopy(BASE)
    for mutate in mutations:
        mutate(b)
    result = process_bundle(b)
    assert result.valid, result.error_text
    return [(w.path, w.message) for w in result.warnings]


def both(*mutations: Mutation) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(b)

    return mutate


def validators(*items: dict[str, Any]) -> Mutation:
    return lambda b: spec(b).update(validators=list(items))


def v(key: str, kind: str, expected: str, target: str = "final_output", **config: Any) -> dict[str, Any]:
    validator: dict[str, Any] = {"key": key, "type": kind, "target": target, "expected_from": expected}
    if config:
        validator["config"] = config
    return validator


def scorecard(**card: Any) -> Mutation:
    return lambda b: spec(b).update(scorecard=card)


def instructions(text: str) -> Mutation:
    return lambda b: b["challenges"][0].update(instructions=text)


def dim(key: str, *members: str, **fields: Any) -> dict[str, Any]:
    return {"key": key, "source": "validators", "validators": list(members), **fields}


SHAPE = v("shape", "json_schema", OBJECT)
EXACT = v("exact", "exact_match", "case.expectations.answer")

NEVER_PASS = [
    pytest.param(
        validators(SHAPE, v("word", "normalized_match", "literal:confidence")),
        [
            (
                f"{ES}.validators[1].expected_from",
                'compares the whole final output with "confidence", which can never be a JSON object, but validator "shape" passes only '
                "when the whole final output is a JSON object: the two can never pass together. To check that the output mentions "
                '"confidence", use type: contains',
            ),
            (CARD, f'no case of this pack can pass: validators "word" and "shape" can never pass together, and {EVERY}'),
        ],
        id="a word against a JSON report: the deep-research pack",
    ),
    pytest.param(
        validators(
            v("risk", "json_path_match", "literal:$.risk.level"), v("verdict", "exact_match", "literal:high risk", "run.final_output")
        ),
        [
            (
                f"{ES}.validators[1].expected_from",
                'compares the whole final output with "high risk", which can never be a JSON object, but validator "risk" passes only '
                "when the whole final output is a JSON object: the two can never pass together",
            ),
            (CARD, f'no case of this pack can pass: validators "verdict" and "risk" can never pass together, and {EVERY}'),
        ],
        id="a phrase against the target of a JSON path",
    ),
    pytest.param(
        validators(
            v("first", "json_path_match", 'literal:{"path": "$[0]", "comparator": "exists"}'), v("is_x", "normalized_match", "literal:x")
        ),
        [
            (
                f"{ES}.validators[1].expected_from",
                'compares the whole final output with "x", which can never be a JSON array, but validator "first" passes only when the '
                'whole final output is a JSON array: the two can never pass together. To check that the output mentions "x", use type: '
                "contains",
            ),
            (CARD, f'no case of this pack can pass: validators "is_x" and "first" can never pass together, and {EVERY}'),
        ],
        id="a word against a JSON array",
    ),
    pytest.param(
        validators(v("doc", "json_schema", 'literal:{"minLength": 2}'), v("yes", "exact_match", "literal:yes")),
        [
            (
                f"{ES}.validators[1].expected_from",
                'compares the whole final output with "yes", which can never be a JSON document, but validator "doc" passes only when '
                'the whole final output is a JSON document: the two can never pass together. To check that the output mentions "yes", '
                "use type: contains",
            ),
            (CARD, f'no case of this pack can pass: validators "yes" and "doc" can never pass together, and {EVERY}'),
        ],
        id="an exact word against any JSON document",
    ),
    pytest.param(
        validators(
            SHAPE,
            v("same_object", "exact_match", 'literal:{"summary": "ok"}'),
            v("quoted", "normalized_match", 'literal:{"Summary": "OK"}'),
            v("words", "normalized_match", "literal:summary ok", pipeline=["strip_punctuation", "collapse_whitespace", "trim"]),
            v("elsewhere", "exact_match", "literal:done", "file:report"),
        ),
        [],
        id="equalities a JSON object can satisfy, or on another target",
    ),
    pytest.param(
        both(
            lambda b: spec(b).update(post_execution_checks=[{"key": "report", "type": "file_capture", "path": "report.json"}]),
            validators(
                EXACT,
                {"key": "report_shape", "type": "file_json_schema", "target": "file:report", "config": {"schema": {"type": "object"}}},
                v("report_done", "exact_match", "literal:done", "file:report"),
            ),
        ),
        [
            (
                f"{ES}.validators[2].expected_from",
                'compares "file:report" with "done", which can never be a JSON object, but validator "report_shape" passes only when '
                '"file:report" is a JSON object: the two can never pass together. To check that "file:report" mentions "done", use type: '
                "contains",
            ),
            (CARD, f'no case of this pack can pass: validators "report_done" and "report_shape" can never pass together, and {EVERY}'),
        ],
        id="a word against a captured file a schema wants to be an object",
    ),
    pytest.param(
        validators(
            v("list", "json_path_match", "literal:$[0]"), v("bare", "normalized_match", "literal:a b", pipeline=["strip_formatting"])
        ),
        [],
        id="a normalisation that removes the brackets of an array",
    ),
    pytest.param(
        validators(v("doc", "json_schema", 'literal:{"type": "string"}'), v("quoted", "exact_match", 'literal:"yes please"')),
        [],
        id="a JSON string literal against a JSON document",
    ),
    pytest.param(
        validators(EXACT, v("done", "regex_match", "literal:^Answer: \\d+$\\n")),
        [
            (f"{ES}.validators[1].expected_from", f'"^Answer: \\d+$\\n" {NEVER_MATCHES}'),
            (CARD, f'no case of this pack can pass: validator "done" can never pass (its pattern matches nothing), and {EVERY}'),
        ],
        id="a regex that cannot match",
    ),
    pytest.param(validators(EXACT, v("done", "regex_match", "literal:(?m)^done$")), [], id="a multi-line regex that can match"),
    pytest.param(
        validators(EXACT, v("done", "regex_match", "literal:(done")),
        [
            (
                f"{ES}.validators[1].expected_from",
                "cannot be read (error parsing regexp: missing ): (done): the validator is a pack error in every case, found "
                "only when cases are scored",
            )
        ],
        id="a regex RE2 cannot compile",
    ),
    pytest.param(
        validators(
            EXACT,
            v("schema_text", "json_schema", "literal:{type: object}"),
            v("schema_kind", "json_schema", 'literal:{"type": "object", "minLength": "two"}'),
            v("path_spec", "json_path_match", 'literal:{"path": "$.a"'),
        ),
        [
            (
                f"{ES}.validators[1].expected_from",
                "cannot be read (not valid JSON: Expecting property name enclosed in double quotes at character 1): the validator is a "
                "pack error in every case, found only when cases are scored",
            ),
            (
                f"{ES}.validators[2].expected_from",
                "cannot be read (not a valid JSON schema: jsonschema: /minLength: 'two' is not of type 'integer'): the validator is a "
                "pack error in every case, found only when cases are scored",
            ),
            (
                f"{ES}.validators[3].expected_from",
                "cannot be read (not valid JSON: Expecting ',' delimiter at character 14): the validator is a pack error in every case, "
                "found only when cases are scored",
            ),
        ],
        id="JSON expectations the scorer cannot read",
    ),
    pytest.param(
        validators(
            EXACT,
            v("r2", "rouge_score", "literal:Paris", variant="rouge-2"),
            v("r2_refs", "rouge_score", 'literal:["Paris", "Lyon"]', variant="rouge-2", threshold=0.2),
            v("r2_zero", "rouge_score", "literal:Paris", variant="rouge-2", threshold=0),
            v("r2_pair", "rouge_score", "literal:in Paris", variant="rouge-2"),
            v("r1", "rouge_score", "literal:Paris", variant="rouge-1"),
        ),
        [
            (
                f"{ES}.validators[1].config.variant",
                "no score can reach 0.3: ROUGE-2 counts pairs of consecutive words and the expected text has a single word, so every "
                "answer scores 0 (use rouge-1 or rouge-l)",
            ),
            (
                f"{ES}.validators[2].config.threshold",
                "no score can reach 0.2: ROUGE-2 counts pairs of consecutive words and the expected text has a single word, so every "
                "answer scores 0 (use rouge-1 or rouge-l)",
            ),
            (
                CARD,
                'no case of this pack can pass: validator "r2" can never pass (its ROUGE-2 score is always 0); validator "r2_refs" can '
                f"never pass (its ROUGE-2 score is always 0), and {EVERY}",
            ),
        ],
        id="a ROUGE-2 threshold one-word references cannot reach",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), NEVER_PASS)
def test_checks_that_can_never_pass(mutate: Mutation, expected: Warnings) -> None:
    assert warnings_after(mutate) == expected


NEVER = v("never", "regex_match", "literal:a^b")
NEVER_WARNING = (f"{ES}.validators[1].expected_from", f'"a^b" {NEVER_MATCHES}')
NEVER_CAUSE = 'validator "never" can never pass (its pattern matches nothing)'

VERDICTS = [
    pytest.param(
        scorecard(strategy="weighted", pass_threshold=0.9, dimensions=[dim("correctness", "exact", "never")]),
        [
            NEVER_WARNING,
            (f"{CARD}.pass_threshold", f"no score can reach it: the score is at most 0.5 ({NEVER_CAUSE}), so no case can pass"),
        ],
        id="a scorecard threshold no score can reach",
    ),
    pytest.param(
        scorecard(dimensions=[dim("correctness", "exact", "never", gate=True, pass_threshold=0.8), {"key": "reliability"}]),
        [
            NEVER_WARNING,
            (
                f"{CARD}.dimensions[0].pass_threshold",
                f'no score can reach it: dimension "correctness" scores at most 0.5 ({NEVER_CAUSE}), so no case can pass',
            ),
        ],
        id="a gate no score can reach",
    ),
    pytest.param(
        scorecard(
            strategy="binary", dimensions=[dim("correctness", "exact", pass_threshold=1), dim("format", "never", pass_threshold=0.5)]
        ),
        [
            NEVER_WARNING,
            (
                f"{CARD}.dimensions[1].pass_threshold",
                f'no score can reach it: dimension "format" scores at most 0 ({NEVER_CAUSE}), so no case can pass',
            ),
        ],
        id="a binary dimension no score can reach",
    ),
    pytest.param(
        scorecard(
            strategy="weighted",
            pass_threshold=0.2,
            dimensions=[dim("correctness", "exact", gate=True, pass_threshold=1), dim("format", "never", pass_threshold=0.9)],
        ),
        [NEVER_WARNING],
        id="a never-passing validator where no threshold the scorer reads needs it",
    ),
    pytest.param(
        lambda b: None,  # the base scorecard: weighted, every validator must pass
        [NEVER_WARNING, (CARD, f"no case of this pack can pass: {NEVER_CAUSE}, and {EVERY}")],
        id="every validator must pass",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), VERDICTS)
def test_what_a_never_passing_validator_does_to_the_case(mutate: Mutation, expected: Warnings) -> None:
    assert warnings_after(validators(EXACT, NEVER), mutate) == expected


def test_two_gates_that_can_never_both_pass_are_found_through_the_pair() -> None:
    warnings = warnings_after(
        validators(SHAPE, v("word", "exact_match", "literal:done")),
        scorecard(dimensions=[dim("format", "shape", gate=True, pass_threshold=1), dim("answer", "word", gate=True, pass_threshold=1)]),
    )
    assert warnings[1:] == [
        (
            CARD,
            'no case of this pack can pass: validators "word" and "shape" can never pass together, and dimension "answer" then scores 0, '
            "below 1",
        )
    ]


MANDATORY = "Answer with the distance. The answer must include the units, e.g. km."
UNITS = v("mentions_units", "regex_match", "literal:\\b(km|mi)\\b")
LENIENT = [
    pytest.param(
        scorecard(strategy="weighted", pass_threshold=0.5, dimensions=[dim("correctness", "exact", "mentions_units")]),
        MANDATORY,
        [
            (
                f"{CARD}.pass_threshold",
                'validator "mentions_units" can fail while the case still passes (weighted scorecard: the case passes on the score at '
                'the pass_threshold 0.5), yet challenge "c1" makes it mandatory: "The answer must include the units, e.g. km". '
                f"{GATE_IT}",
            )
        ],
        id="a weighted pass threshold below what one failure costs",
    ),
    pytest.param(
        scorecard(strategy="hybrid", dimensions=[dim("correctness", "exact", gate=True, pass_threshold=1), dim("style", "mentions_units")]),
        "- Units are REQUIRED: km or mi\n- Be brief",
        [
            (
                f"{CARD}.strategy",
                'validator "mentions_units" can fail while the case still passes (hybrid scorecard: the case passes on gate "correctness" '
                'at 1, nothing else (no pass_threshold)), yet challenge "c1" makes it mandatory: "Units are REQUIRED: km or mi". '
                f"{GATE_IT}",
            )
        ],
        id="a hybrid scorecard whose mandatory check is not a gate",
    ),
    pytest.param(
        scorecard(strategy="weighted", pass_threshold=0.5, dimensions=[dim("correctness", "exact", "mentions_units")]),
        "Answer with the distance. Units are welcome.",
        [],
        id="instructions that make nothing mandatory",
    ),
    pytest.param(
        scorecard(strategy="weighted", pass_threshold=0.5, dimensions=[dim("correctness", "exact", "mentions_units")]),
        "You must answer quickly. Units are welcome.",
        [],
        id="a mandatory clause about something no lenient validator checks",
    ),
    pytest.param(scorecard(dimensions=["correctness"]), MANDATORY, [], id="every validator must pass already"),
    pytest.param(
        scorecard(
            strategy="weighted", pass_threshold=0.5, dimensions=[dim("correctness", "exact", "mentions_units", gate=True, pass_threshold=1)]
        ),
        MANDATORY,
        [],
        id="the mandatory check is gated",
    ),
]


@pytest.mark.parametrize(("mutate", "text", "expected"), LENIENT)
def test_a_validator_that_can_fail_without_failing_the_case_the_instructions_make_mandatory(
    mutate: Mutation, text: str, expected: Warnings
) -> None:
    assert warnings_after(validators(EXACT, UNITS), mutate, instructions(text)) == expected


def test_never_pass_warnings_carry_the_lines_of_the_validator_and_the_scorecard() -> None:
    source = """pack: {slug: demo, name: Demo, family: research}
version:
  number: 1
  execution_mode: prompt_eval
  evaluation_spec:
    name: spec
    version_number: 1
    judge_mode: deterministic
    validators:
      - key: report
        type: json_schema
        target: final_output
        expected_from: 'literal:{"type": "object"}'
      - key: confident
        type: normalized_match
        target: final_output
        expected_from: literal:confidence
    scorecard:
      dimensions: [correctness]
challenges: [{key: c1, title: C, category: demo, difficulty: easy, instructions: Reply with a JSON report.}]
input_sets: [{key: s, name: S, cases: [{challenge_key: c1, case_key: k}]}]
"""
    result = process_bundle(source)
    assert result.valid
    assert [(w.path, w.line) for w in result.warnings] == [(f"{ES}.validators[1].expected_from", 17), (CARD, 18)]
