"""Tolerant matches: fuzzy_match, normalized_match, numeric_match."""

from __future__ import annotations

import math
import re
from typing import Any

from engine.scoring.validators.base import (
    EvaluatorError,
    Outcome,
    PackError,
    ValidatorCall,
    binary,
    config_bool,
    config_float,
    register,
    strict_keys,
)
from engine.scoring.validators.textnorm import STEPS, apply_pipeline, collapse_whitespace

MAX_FUZZY_RUNES = 100_000
DEFAULT_PIPELINE = ["trim", "lowercase", "collapse_whitespace"]
CURRENCY_TOKENS = re.compile(r"USD|EUR|GBP|JPY|INR|[$€£¥₹,%]")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def similarity(a: str, b: str) -> float:
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    return (total - levenshtein(a, b)) / total


@register("fuzzy_match")
def fuzzy_match(call: ValidatorCall) -> Outcome:
    strict_keys(call.config, {"threshold", "case_insensitive", "normalize"})
    threshold = config_float(call.config, "threshold", 0.8, lo=0.0, hi=1.0, clamp=True)
    actual, expected = call.actual(), call.expected()
    if len(actual) > MAX_FUZZY_RUNES or len(expected) > MAX_FUZZY_RUNES:
        raise EvaluatorError(f"fuzzy_match inputs are limited to {MAX_FUZZY_RUNES} characters")
    a, b = actual, expected
    if config_bool(call.config, "case_insensitive"):
        a, b = a.casefold(), b.casefold()
    if config_bool(call.config, "normalize"):
        a, b = collapse_whitespace(a).strip(), collapse_whitespace(b).strip()
    score = similarity(a, b)
    return Outcome(score >= threshold, score, f"similarity {score:.3f} (threshold {threshold:g})", expected, actual)


def pipeline_of(config: dict[str, Any]) -> list[str]:
    strict_keys(config, {"pipeline", "normalizations"})
    if "pipeline" in config and "normalizations" in config:
        raise PackError("cannot mix pipeline with normalizations")
    steps = config.get("pipeline", config.get("normalizations"))
    if steps is None:
        return list(DEFAULT_PIPELINE)
    if not isinstance(steps, list):
        raise PackError("config.pipeline must be a list of steps")
    for index, step in enumerate(steps):
        if step not in STEPS:
            raise PackError(f"config.pipeline[{index}]: {step!r} is not a supported normalization step")
    return list(steps)


@register("normalized_match")
def normalized_match(call: ValidatorCall) -> Outcome:
    steps = pipeline_of(call.config)
    actual, expected = call.actual(), call.expected()
    a, b = apply_pipeline(actual, steps), apply_pipeline(expected, steps)
    return binary(a == b, "equal after normalisation" if a == b else f"{a[:200]!r} != {b[:200]!r} after normalisation", expected, actual)


def parse_number(text: str, *, extract: bool, side: str) -> float:
    if extract:
        cleaned = CURRENCY_TOKENS.sub("", text)
        match = NUMBER.search(cleaned)
        if match is None:
            raise _NoNumber(f"no number found in {side} {text[:80]!r}")
        return float(match.group(0))
    try:
        return float(text.strip())
    except ValueError:
        raise _NoNumber(f"{side} {text[:80]!r} is not a number") from None


class _NoNumber(Exception):
    pass


def round_significant(value: float, digits: int) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


@register("numeric_match")
def numeric_match(call: ValidatorCall) -> Outcome:
    config = call.config
    strict_keys(config, {"absolute_tolerance", "relative_tolerance", "extract_number", "significant_digits", "tolerance_mode", "tolerance"})
    modern = {"absolute_tolerance", "relative_tolerance"} & config.keys()
    legacy = {"tolerance_mode", "tolerance"} & config.keys()
    if modern and legacy:
        raise PackError("cannot mix tolerance_mode/tolerance with absolute_tolerance/relative_tolerance")
    absolute = relative = None
    if modern:
        if config.get("absolute_tolerance") is not None:
            absolute = config_float(config, "absolute_tolerance", 0.0, lo=0.0, hi=math.inf)
        if config.get("relative_tolerance") is not None:
            relative = config_float(config, "relative_tolerance", 0.0, lo=0.0, hi=math.inf)
    elif legacy:
        mode = config.get("tolerance_mode") or "relative"
        if mode not in ("absolute", "relative"):
            raise PackError('config.tolerance_mode must be "absolute" or "relative"')
        tolerance = config_float(config, "tolerance", 0.001, lo=0.0, hi=math.inf)
        absolute, relative = (tolerance, None) if mode == "absolute" else (None, tolerance)
    digits = config.get("significant_digits")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int) or digits <= 0):
        raise PackError("config.significant_digits must be greater than 0")
    extract = config_bool(config, "extract_number")
    expected_text, actual_text = call.expected(), call.actual()
    try:
        expected = parse_number(expected_text, extract=extract, side="expected")
    except _NoNumber as exc:
        raise PackError(str(exc)) from exc
    try:
        actual = parse_number(actual_text, extract=extract, side="actual")
    except _NoNumber as exc:
        return binary(False, str(exc), expected_text, actual_text)
    if digits:
        expected, actual = round_significant(expected, digits), round_significant(actual, digits)
    diff = abs(actual - expected)
    if absolute is None and relative is None:
        passed = actual == expected
    else:
        passed = (
            (absolute is not None and diff <= absolute)
            or (relative is not None and expected != 0 and diff <= relative * abs(expected))
            or diff == 0
        )
    return binary(passed, f"|{actual:g} - {expected:g}| = {diff:g}", expected, actual)
