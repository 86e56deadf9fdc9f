"""Per-type validator ``config`` contracts checked at load (spec §4.6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bundle.decode import json_mismatch, json_value_words
from bundle.validate.common import Report, re2_error

_FLOAT, _INT, _BOOL, _STR, _STRS, _RAW = "float64", "int", "bool", "string", "[]string", "raw"

_CONTRACTS: dict[str, dict[str, str]] = {
    "fuzzy_match": {"threshold": _FLOAT, "case_insensitive": _BOOL, "normalize": _BOOL},
    "numeric_match": {
        "absolute_tolerance": _FLOAT,
        "relative_tolerance": _FLOAT,
        "extract_number": _BOOL,
        "significant_digits": _INT,
        "tolerance_mode": _STR,
        "tolerance": _FLOAT,
    },
    "normalized_match": {"pipeline": _STRS, "normalizations": _STRS},
    "token_f1": {
        "threshold": _FLOAT,
        "normalize": _BOOL,
        "remove_articles": _BOOL,
        "remove_punctuation": _BOOL,
    },
    "math_equivalence": {
        "extract_answer": _BOOL,
        "answer_delimiter": _STR,
        "comparison_mode": _STR,
        "numeric_fallback": _BOOL,
        "tolerance": _FLOAT,
    },
    "bleu_score": {
        "threshold": _FLOAT,
        "max_ngram": _INT,
        "smoothing": _STR,
        "case_insensitive": _BOOL,
        "normalize": _BOOL,
    },
    "rouge_score": {
        "threshold": _FLOAT,
        "variant": _STR,
        "beta": _FLOAT,
        "case_insensitive": _BOOL,
        "normalize": _BOOL,
    },
    "chrf_score": {
        "threshold": _FLOAT,
        "char_order": _INT,
        "beta": _FLOAT,
        "case_insensitive": _BOOL,
        "normalize": _BOOL,
    },
    "code_execution": {
        "test_command": _STR,
        "timeout_ms": _INT,
        "scoring": _STR,
        "pass_threshold": _FLOAT,
    },
    "tool_call_assertion": {
        "tool_name": _STR,
        "must_call": _BOOL,
        "count": _INT,
        "min_count": _INT,
        "max_count": _INT,
        "arguments_contain": _RAW,
        "ordered_tools": _STRS,
        "order_mode": _STR,
    },
    "postcondition": {"condition": _STR, "value": _RAW, "json_path": _STR},
}

NORMALIZATION_STEPS = frozenset(
    {
        "trim",
        "lowercase",
        "collapse_whitespace",
        "strip_punctuation",
        "strip_currency",
        "strip_formatting",
        "normalize_unicode",
        "remove_articles",
        "sort_words",
        "sort_lines",
    }
)
POSTCONDITIONS = (
    "exists",
    "not_exists",
    "contains",
    "not_contains",
    "regex_match",
    "json_path_match",
    "equals",
)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def _type_ok(value: Any, expected: str) -> bool:
    if value is None or expected == _RAW:
        return True
    if expected == _FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == _INT:
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if expected == _BOOL:
        return isinstance(value, bool)
    if expected == _STR:
        return isinstance(value, str)
    return isinstance(value, list) and all(isinstance(v, str) or v is None for v in value)


def _mismatch(expected: str, value: Any) -> str:
    """Plain words for a config field of the wrong JSON type (issue 25: no Go decoder text)."""
    if expected != _STRS:
        return json_mismatch(expected, value)
    if isinstance(value, list):
        bad = next(v for v in value if not isinstance(v, str) and v is not None)
        return f"must be a list of text, not a list holding {json_value_words(bad)}"
    return f"must be a list of text, not {json_value_words(value)}"


def _decode(config: Any, contract: dict[str, str], path: str, report: Report) -> dict[str, Any] | None:
    """Strict JSON decode of a config object: first problem wins, like encoding/json."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        report.add(path, f"invalid JSON: the config must be a mapping of its fields, not {json_value_words(config)}")
        return None
    for key, value in config.items():
        expected = contract.get(key)
        if expected is None:
            fields = ", ".join(sorted(contract))
            report.add(path, f'invalid JSON: "{key}" is not a field of this config: remove it or check its spelling (fields: {fields})')
            return None
        if not _type_ok(value, expected):
            report.add(path, f'invalid JSON: "{key}" {_mismatch(expected, value)}')
            return None
    return {k: v for k, v in config.items() if v is not None}


def _unit(config: dict[str, Any], key: str, path: str, report: Report) -> None:
    value = config.get(key)
    if value is not None and not 0 <= value <= 1:
        report.add(f"{path}.{key}", "must be between 0 and 1")


def _non_negative(config: dict[str, Any], key: str, path: str, report: Report) -> None:
    value = config.get(key)
    if value is not None and value < 0:
        report.add(f"{path}.{key}", "must be greater than or equal to 0")


def _positive(config: dict[str, Any], key: str, path: str, report: Report) -> None:
    value = config.get(key)
    if value is not None and value <= 0:
        report.add(f"{path}.{key}", "must be greater than 0")


def validate_config(validator_type: str, has_config: bool, config: Any, path: str, report: Report) -> None:
    contract = _CONTRACTS.get(validator_type)
    if contract is None:
        return
    if validator_type == "tool_call_assertion" and (not has_config or config is None):
        report.add(path, "tool_call_assertion config is required")
        return
    if validator_type == "postcondition" and (not has_config or config is None):
        report.add(path, "is required")
        return
    decoded = _decode(config, contract, path, report)
    if decoded is None:
        return
    check = _CHECKS.get(validator_type)
    if check is not None:
        check(decoded, path, report)


def _fuzzy(c: dict[str, Any], path: str, report: Report) -> None:
    _unit(c, "threshold", path, report)


def _numeric(c: dict[str, Any], path: str, report: Report) -> None:
    legacy = "tolerance_mode" in c or "tolerance" in c
    modern = "absolute_tolerance" in c or "relative_tolerance" in c
    if legacy and modern:
        report.add(
            path,
            "cannot mix legacy tolerance_mode/tolerance with absolute_tolerance/relative_tolerance",
        )
        return
    for key in ("absolute_tolerance", "relative_tolerance", "tolerance"):
        _non_negative(c, key, path, report)
    _positive(c, "significant_digits", path, report)
    mode = c.get("tolerance_mode")
    if mode and mode not in ("absolute", "relative"):
        report.add(f"{path}.tolerance_mode", 'must be "absolute" or "relative"')


def _normalized(c: dict[str, Any], path: str, report: Report) -> None:
    if c.get("pipeline") and c.get("normalizations"):
        report.add(path, "cannot mix pipeline with normalizations")
        return
    key = "pipeline" if c.get("pipeline") else "normalizations"
    for j, step in enumerate(c.get(key) or ()):
        if step not in NORMALIZATION_STEPS:
            report.add(f"{path}.{key}[{j}]", f'"{step}" is not a supported normalization step')


def _token_f1(c: dict[str, Any], path: str, report: Report) -> None:
    _unit(c, "threshold", path, report)


def _math(c: dict[str, Any], path: str, report: Report) -> None:
    mode = c.get("comparison_mode")
    if mode and mode not in ("symbolic", "numeric"):
        report.add(f"{path}.comparison_mode", 'must be "symbolic" or "numeric"')
    _non_negative(c, "tolerance", path, report)


def _bleu(c: dict[str, Any], path: str, report: Report) -> None:
    _unit(c, "threshold", path, report)
    _positive(c, "max_ngram", path, report)
    smoothing = c.get("smoothing")
    if smoothing and smoothing not in ("none", "method1"):
        report.add(f"{path}.smoothing", 'must be "none" or "method1"')


def _rouge(c: dict[str, Any], path: str, report: Report) -> None:
    _unit(c, "threshold", path, report)
    variant = c.get("variant")
    if variant and variant not in ("rouge-1", "rouge-2", "rouge-l"):
        report.add(f"{path}.variant", 'must be "rouge-1", "rouge-2", or "rouge-l"')
    _positive(c, "beta", path, report)


def _chrf(c: dict[str, Any], path: str, report: Report) -> None:
    _unit(c, "threshold", path, report)
    _positive(c, "char_order", path, report)
    _positive(c, "beta", path, report)


def _code_execution(c: dict[str, Any], path: str, report: Report) -> None:
    if not (c.get("test_command") or "").strip():
        report.add(path, "test_command is required")
    _positive(c, "timeout_ms", path, report)
    scoring = c.get("scoring")
    if scoring:
        if scoring not in ("fraction_passed", "all_or_nothing", "pass_at_k"):
            report.add(f"{path}.scoring", "must be one of fraction_passed, all_or_nothing, pass_at_k")
        elif scoring == "pass_at_k":
            report.add(f"{path}.scoring", "pass_at_k requires multi-sample execution and is not supported yet")
    _unit(c, "pass_threshold", path, report)


def _tool_call(c: dict[str, Any], path: str, report: Report) -> None:
    for key in ("count", "min_count", "max_count"):
        _non_negative(c, key, path, report)
    count, low, high = c.get("count"), c.get("min_count"), c.get("max_count")
    if count is not None and (low is not None or high is not None):
        report.add(f"{path}.count", "cannot be combined with min_count or max_count")
    if low is not None and high is not None and low > high:
        report.add(f"{path}.min_count", "must be less than or equal to max_count")
    for problem in _must_call_problems(c.get("must_call"), count, low, high):
        report.add(f"{path}.must_call", problem)
    if "arguments_contain" in c and not isinstance(c["arguments_contain"], dict):
        report.add(f"{path}.arguments_contain", "must be a JSON object")
    ordered = c.get("ordered_tools") or []
    _check_order(ordered, c.get("order_mode"), path, report)
    if not (c.get("tool_name") or "").strip() and not ordered:
        report.add(path, "must declare at least one tool call assertion")


def _must_call_problems(must_call: bool | None, count: int | None, low: int | None, high: int | None) -> list[str]:
    """Call-count bounds that contradict ``must_call`` (unset: no contradiction possible)."""
    problems = []
    if must_call is True:
        if count == 0:
            problems.append("cannot be true when count is 0")
        if high == 0:
            problems.append("cannot be true when max_count is 0")
    elif must_call is False:
        if count is not None and count > 0:
            problems.append("cannot be false when count is greater than 0")
        if low is not None and low > 0:
            problems.append("cannot be false when min_count is greater than 0")
    return problems


def _check_order(ordered: list[str | None], mode: str | None, path: str, report: Report) -> None:
    for i, name in enumerate(ordered):
        if not (name or "").strip():
            report.add(f"{path}.ordered_tools[{i}]", "must not be empty")
    if mode:
        if mode not in ("subsequence", "exact"):
            report.add(f"{path}.order_mode", 'must be "subsequence" or "exact"')
        if not ordered:
            report.add(f"{path}.ordered_tools", "is required when order_mode is set")


def _postcondition(c: dict[str, Any], path: str, report: Report) -> None:
    condition = (c.get("condition") or "").strip()
    if not condition:
        report.add(f"{path}.condition", "is required")
    elif condition not in POSTCONDITIONS:
        report.add(
            f"{path}.condition",
            "must be one of exists, not_exists, contains, not_contains, regex_match, json_path_match, equals",
        )
    else:
        _CONDITION_CHECKS[condition](c, condition, path, report)


def _has_path(c: dict[str, Any]) -> bool:
    return bool((c.get("json_path") or "").strip())


def _no_json_path(c: dict[str, Any], condition: str, path: str, report: Report) -> None:
    if _has_path(c):
        report.add(f"{path}.json_path", f"must be omitted for {condition}")


def _existence(c: dict[str, Any], condition: str, path: str, report: Report) -> None:
    if "value" in c:
        report.add(f"{path}.value", f"must be omitted for {condition}")
    _no_json_path(c, condition, path, report)


def _containment(c: dict[str, Any], condition: str, path: str, report: Report) -> None:
    if not isinstance(c.get("value"), str):
        report.add(f"{path}.value", "must be a string")
    _no_json_path(c, condition, path, report)


def _regex_match(c: dict[str, Any], condition: str, path: str, report: Report) -> None:
    value = c.get("value")
    if not isinstance(value, str):
        report.add(f"{path}.value", "must be a string regex pattern")
        return
    problem = re2_error(value)
    if problem:
        report.add(f"{path}.value", f"must be a valid regex: {problem}")


def _json_path_match(c: dict[str, Any], condition: str, path: str, report: Report) -> None:
    if not _has_path(c):
        report.add(f"{path}.json_path", "is required")
    _json_value(c, path, report)


def _equals(c: dict[str, Any], condition: str, path: str, report: Report) -> None:
    _json_value(c, path, report)
    _no_json_path(c, condition, path, report)


_CONDITION_CHECKS: dict[str, Callable[[dict[str, Any], str, str, Report], None]] = {
    "exists": _existence,
    "not_exists": _existence,
    "contains": _containment,
    "not_contains": _containment,
    "regex_match": _regex_match,
    "json_path_match": _json_path_match,
    "equals": _equals,
}


def _json_value(c: dict[str, Any], path: str, report: Report) -> None:
    if "value" not in c:
        report.add(f"{path}.value", "is required")
        return
    try:
        json.dumps(c["value"], allow_nan=False)
    except (TypeError, ValueError) as exc:
        report.add(f"{path}.value", f"must be valid JSON: {exc}")


_CHECKS = {
    "fuzzy_match": _fuzzy,
    "numeric_match": _numeric,
    "normalized_match": _normalized,
    "token_f1": _token_f1,
    "math_equivalence": _math,
    "bleu_score": _bleu,
    "rouge_score": _rouge,
    "chrf_score": _chrf,
    "code_execution": _code_execution,
    "tool_call_assertion": _tool_call,
    "postcondition": _postcondition,
}
