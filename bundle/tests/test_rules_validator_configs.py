"""Validator ``config`` contracts (spec §4.6): one case per rule, pinning every error of the bundle."""

from __future__ import annotations

from typing import Any

import pytest

from bundle.validate.common import Report
from bundle.validate.validator_configs import validate_config

from .rules import ES, Errors, Mutation, errors_after, spec

C0 = f"{ES}.validators[0].config"
C1 = f"{ES}.validators[1].config"
SOLUTION_CHECK = [{"key": "sol", "type": "file_capture", "path": "/workspace/out"}]


def config(vtype: str, **fields: Any) -> Mutation:
    """The base validator turned into ``vtype`` with ``fields`` as its config."""
    return lambda b: spec(b)["validators"][0].update(type=vtype, config=fields)


def raw_config(vtype: str, value: Any) -> Mutation:
    return lambda b: spec(b)["validators"][0].update(type=vtype, config=value)


def second(vtype: str, target: str, **declaration: Any) -> Mutation:
    """A second validator of ``vtype``; file targets get a ``sol`` capture to point at."""

    def mutate(b: dict[str, Any]) -> None:
        if target.startswith("file:"):
            spec(b)["post_execution_checks"] = SOLUTION_CHECK
        spec(b)["validators"].append({"key": "v", "type": vtype, "target": target, **declaration})

    return mutate


def tool_calls(**fields: Any) -> Mutation:
    return second("tool_call_assertion", "tool_calls", config={"tool_name": "read", **fields})


def postcondition(**fields: Any) -> Mutation:
    return second("postcondition", "file:sol", config=fields)


def code(**fields: Any) -> Mutation:
    return second("code_execution", "file:sol", config={"test_command": "pytest", **fields})


DECODING = [
    pytest.param(
        raw_config("fuzzy_match", "strict"),
        [(C0, "invalid JSON: the config must be a mapping of its fields, not text `strict`")],
        id="config is an object",
    ),
    pytest.param(
        raw_config("fuzzy_match", [1]),
        [(C0, "invalid JSON: the config must be a mapping of its fields, not a list")],
        id="config list",
    ),
    pytest.param(
        config("fuzzy_match", threshold="high", treshold=1),
        [(C0, 'invalid JSON: "threshold" must be a number, not text `high`')],
        id="float field, first problem wins",
    ),
    pytest.param(
        config("fuzzy_match", case_insensitive="yes"),
        [(C0, 'invalid JSON: "case_insensitive" must be true or false, not text `yes`')],
        id="bool field",
    ),
    pytest.param(
        config("bleu_score", max_ngram=2.5),
        [(C0, 'invalid JSON: "max_ngram" must be a whole number, not a number `2.5`')],
        id="int field",
    ),
    pytest.param(
        config("normalized_match", pipeline=["trim", 1]),
        [(C0, 'invalid JSON: "pipeline" must be a list of text, not a list holding a whole number `1`')],
        id="string list field",
    ),
    pytest.param(
        config("math_equivalence", comparison_mode={"a": 1}),
        [(C0, 'invalid JSON: "comparison_mode" must be text, not a mapping')],
        id="string field",
    ),
    pytest.param(
        config("numeric_match", extract_number=True, tolerance_mode=None, tolerance=0.1, absolute_tolerance=None),
        [],
        id="null fields are absent",
    ),
]

RULES = [
    pytest.param(
        config("numeric_match", tolerance=0.1, relative_tolerance=0.1),
        [(C0, "cannot mix legacy tolerance_mode/tolerance with absolute_tolerance/relative_tolerance")],
        id="numeric tolerance styles",
    ),
    *[
        pytest.param(
            config("numeric_match", **{key: -1}),
            [(f"{C0}.{key}", "must be greater than or equal to 0")],
            id=f"numeric {key} not negative",
        )
        for key in ("absolute_tolerance", "relative_tolerance", "tolerance")
    ],
    pytest.param(
        config("numeric_match", significant_digits=0),
        [(f"{C0}.significant_digits", "must be greater than 0")],
        id="numeric significant digits",
    ),
    pytest.param(
        config("numeric_match", tolerance_mode="fuzzy"),
        [(f"{C0}.tolerance_mode", 'must be "absolute" or "relative"')],
        id="numeric tolerance mode",
    ),
    pytest.param(
        config("normalized_match", normalizations=["shout"]),
        [(f"{C0}.normalizations[0]", '"shout" is not a supported normalization step')],
        id="normalization steps",
    ),
    pytest.param(config("token_f1", threshold=-0.1), [(f"{C0}.threshold", "must be between 0 and 1")], id="token_f1 threshold"),
    pytest.param(
        config("math_equivalence", tolerance=-1),
        [(f"{C0}.tolerance", "must be greater than or equal to 0")],
        id="math tolerance",
    ),
    pytest.param(config("bleu_score", threshold=2), [(f"{C0}.threshold", "must be between 0 and 1")], id="bleu threshold"),
    pytest.param(config("bleu_score", max_ngram=0), [(f"{C0}.max_ngram", "must be greater than 0")], id="bleu max_ngram"),
    pytest.param(config("rouge_score", beta=0), [(f"{C0}.beta", "must be greater than 0")], id="rouge beta"),
    pytest.param(config("chrf_score", threshold=2), [(f"{C0}.threshold", "must be between 0 and 1")], id="chrf threshold"),
    pytest.param(config("chrf_score", char_order=0), [(f"{C0}.char_order", "must be greater than 0")], id="chrf char_order"),
    pytest.param(config("chrf_score", beta=-1), [(f"{C0}.beta", "must be greater than 0")], id="chrf beta"),
    pytest.param(code(test_command=" "), [(C1, "test_command is required")], id="code test_command"),
    pytest.param(code(timeout_ms=0), [(f"{C1}.timeout_ms", "must be greater than 0")], id="code timeout"),
    pytest.param(
        code(scoring="best_of"),
        [(f"{C1}.scoring", "must be one of fraction_passed, all_or_nothing, pass_at_k")],
        id="code scoring",
    ),
    pytest.param(code(pass_threshold=1.5), [(f"{C1}.pass_threshold", "must be between 0 and 1")], id="code pass threshold"),
    pytest.param(
        second("tool_call_assertion", "tool_calls", config=None),
        [(C1, "tool_call_assertion config is required")],
        id="tool calls config null",
    ),
    *[
        pytest.param(
            tool_calls(**{key: -1}),
            [(f"{C1}.{key}", "must be greater than or equal to 0")],
            id=f"tool calls {key} not negative",
        )
        for key in ("count", "min_count", "max_count")
    ],
    pytest.param(
        tool_calls(count=1, max_count=2),
        [(f"{C1}.count", "cannot be combined with min_count or max_count")],
        id="tool calls count alone",
    ),
    pytest.param(
        tool_calls(min_count=3, max_count=2),
        [(f"{C1}.min_count", "must be less than or equal to max_count")],
        id="tool calls min above max",
    ),
    pytest.param(
        tool_calls(must_call=True, max_count=0),
        [(f"{C1}.must_call", "cannot be true when max_count is 0")],
        id="must_call with max 0",
    ),
    pytest.param(
        tool_calls(must_call=False, count=2),
        [(f"{C1}.must_call", "cannot be false when count is greater than 0")],
        id="must_not_call with count",
    ),
    pytest.param(
        tool_calls(must_call=False, min_count=1),
        [(f"{C1}.must_call", "cannot be false when min_count is greater than 0")],
        id="must_not_call with min",
    ),
    pytest.param(
        tool_calls(arguments_contain=["path"]),
        [(f"{C1}.arguments_contain", "must be a JSON object")],
        id="arguments_contain object",
    ),
    pytest.param(
        tool_calls(ordered_tools=["read", " "]),
        [(f"{C1}.ordered_tools[1]", "must not be empty")],
        id="ordered tools not blank",
    ),
    pytest.param(
        tool_calls(ordered_tools=["read"], order_mode="loose"),
        [(f"{C1}.order_mode", 'must be "subsequence" or "exact"')],
        id="order mode enum",
    ),
    pytest.param(
        tool_calls(order_mode="exact"),
        [(f"{C1}.ordered_tools", "is required when order_mode is set")],
        id="order mode needs tools",
    ),
    pytest.param(
        tool_calls(tool_name=" ", must_call=True),
        [(C1, "must declare at least one tool call assertion")],
        id="tool name or ordered tools",
    ),
    pytest.param(
        second("postcondition", "file:sol"),
        [(C1, "is required")],
        id="postcondition config required",
    ),
    pytest.param(postcondition(condition=" "), [(f"{C1}.condition", "is required")], id="postcondition condition required"),
    pytest.param(
        postcondition(condition="larger", value=1, json_path="$.a"),
        [(f"{C1}.condition", "must be one of exists, not_exists, contains, not_contains, regex_match, json_path_match, equals")],
        id="postcondition condition enum",
    ),
    pytest.param(
        postcondition(condition="not_exists", value=0, json_path="$.a"),
        [(f"{C1}.value", "must be omitted for not_exists"), (f"{C1}.json_path", "must be omitted for not_exists")],
        id="not_exists takes nothing",
    ),
    pytest.param(
        postcondition(condition="contains", value=3, json_path="$.a"),
        [(f"{C1}.value", "must be a string"), (f"{C1}.json_path", "must be omitted for contains")],
        id="contains takes a string",
    ),
    pytest.param(
        postcondition(condition="not_contains"),
        [(f"{C1}.value", "must be a string")],
        id="not_contains needs a value",
    ),
    pytest.param(
        postcondition(condition="regex_match", value=["a"]),
        [(f"{C1}.value", "must be a string regex pattern")],
        id="regex needs a string",
    ),
    pytest.param(
        postcondition(condition="regex_match", value="a(?!b)"),
        [(f"{C1}.value", "must be a valid regex: error parsing regexp: invalid perl operator: (?!")],
        id="regex is RE2",
    ),
    pytest.param(
        postcondition(condition="json_path_match"),
        [(f"{C1}.json_path", "is required"), (f"{C1}.value", "is required")],
        id="json_path_match needs a path and a value",
    ),
    pytest.param(
        postcondition(condition="equals", value=None),
        [(f"{C1}.value", "is required")],
        id="a null value is no value",
    ),
    pytest.param(
        postcondition(condition="equals", json_path="$.a"),
        [(f"{C1}.value", "is required"), (f"{C1}.json_path", "must be omitted for equals")],
        id="equals needs a value and no path",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), DECODING + RULES)
def test_it_reports_each_validator_config_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


ACCEPTED = [
    pytest.param(config("numeric_match", absolute_tolerance=0, relative_tolerance=0.1, significant_digits=3), id="numeric modern"),
    pytest.param(config("numeric_match", tolerance_mode="relative", tolerance=0.5, extract_number=True), id="numeric legacy"),
    pytest.param(config("normalized_match", pipeline=["trim", "lowercase"]), id="normalized pipeline"),
    pytest.param(config("math_equivalence", comparison_mode="numeric", tolerance=0, extract_answer=True), id="math"),
    pytest.param(config("bleu_score", smoothing="method1", max_ngram=4, threshold=0.5), id="bleu"),
    pytest.param(config("rouge_score", variant="rouge-l", beta=1.2), id="rouge"),
    pytest.param(config("chrf_score", char_order=6, beta=2, case_insensitive=False), id="chrf"),
    pytest.param(code(scoring="all_or_nothing", timeout_ms=1000, pass_threshold=1), id="code execution"),
    pytest.param(tool_calls(must_call=True, min_count=1, max_count=2, arguments_contain={"path": "a"}), id="tool calls bounds"),
    pytest.param(tool_calls(tool_name="", ordered_tools=["read", "write"], order_mode="subsequence"), id="ordered tools only"),
    pytest.param(tool_calls(must_call=False, count=0), id="must not call"),
    pytest.param(postcondition(condition="exists"), id="exists"),
    pytest.param(postcondition(condition="regex_match", value="^ok$"), id="regex"),
    pytest.param(postcondition(condition="json_path_match", json_path="$.a", value=False), id="json path"),
    pytest.param(postcondition(condition="equals", value={"a": [1, 2]}), id="equals"),
]


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_it_accepts_well_formed_validator_configs(mutate: Mutation) -> None:
    assert errors_after(mutate) == []


def test_it_rejects_a_postcondition_value_that_is_not_json() -> None:
    # YAML and JSON sources cannot carry one (the parser refuses .nan); a caller's dict can.
    report = Report()
    validate_config("postcondition", True, {"condition": "equals", "value": float("nan")}, "config", report)
    assert report.items == [("config.value", "must be valid JSON: Out of range float values are not JSON compliant")]
