"""String validators: exact_match, contains, regex_match, boolean_assert."""

from __future__ import annotations

from typing import Any

import re2

from engine.scoring.validators.base import EvaluatorError, Outcome, PackError, ValidatorCall, binary, register

TRUE_WORDS = {"true", "1", "yes"}
FALSE_WORDS = {"false", "0", "no"}


@register("exact_match")
def exact_match(call: ValidatorCall) -> Outcome:
    actual, expected = call.actual(), call.expected()
    same = actual == expected
    return binary(same, "exact match" if same else "output differs from expected", expected, actual)


@register("contains")
def contains(call: ValidatorCall) -> Outcome:
    actual, expected = call.actual(), call.expected()
    found = expected in actual
    return binary(found, "expected substring found" if found else "expected substring not found", expected, actual)


def compile_regex(pattern: str) -> Any:  # a re2 pattern (re2 ships no type information)
    try:
        return re2.compile(pattern)
    except Exception as exc:  # re2 raises its own error type
        raise PackError(f"invalid regex {pattern!r}: {exc}") from exc


@register("regex_match")
def regex_match(call: ValidatorCall) -> Outcome:
    actual = call.actual()
    pattern = call.expected()
    found = compile_regex(pattern).search(actual) is not None
    return binary(found, "pattern matched" if found else "pattern did not match", pattern, actual)


def parse_bool(text: str, side: str) -> bool:
    word = text.strip().casefold()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise PackError(f"{side} value {text[:80]!r} is not a boolean (true/1/yes or false/0/no)")


@register("boolean_assert")
def boolean_assert(call: ValidatorCall) -> Outcome:
    expected = parse_bool(call.expected(), "expected")
    actual_text = call.actual()
    try:
        actual = parse_bool(actual_text, "actual")
    except PackError as exc:
        # An unparseable *output* is the agent's fault, not the pack's.
        raise EvaluatorError(str(exc)) from exc
    same = actual == expected
    return binary(same, "booleans equal" if same else "booleans differ", expected, actual)
