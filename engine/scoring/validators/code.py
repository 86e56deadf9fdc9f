"""code_execution: score the test command that verification ran in a fresh sandbox (§5.4).

The exit status decides (docs/scoring.md, "Verification"): a non-zero exit, a crash or a timeout
fails the check whatever was printed. Test counts may only lower the score of a check that exited
0, and come only from the checker's results file (``$AGENTCLASH_RESULTS``), never from stdout or
stderr, which the code under test can print into.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.scoring.validators.base import (
    InfraError,
    Outcome,
    PackError,
    ValidatorCall,
    config_float,
    register,
    strict_keys,
)
from engine.types import JSON

DEFAULT_TIMEOUT_MS = 30_000
SCORING_MODES = ("fraction_passed", "all_or_nothing", "pass_at_k")
_COUNT = re.compile(r"(\d+)\s+(passed|failed|errors?|total)\b", re.IGNORECASE)
_SUITE = re.compile(r"<(testsuites?)\b([^>]*)>")
_ATTR = re.compile(r'(\w+)="(\d+)"')
_GO_RESULT = re.compile(r"^\s*--- (PASS|FAIL):", re.MULTILINE)


def _counts(passed: int, failed: int, errors: int, total: int | None = None) -> dict[str, int]:
    return {"passed": passed, "failed": failed, "errors": errors, "total": total if total is not None else passed + failed + errors}


def _json_counts(text: str) -> dict[str, int] | None:
    candidates = [text.strip()] + [line.strip() for line in reversed(text.splitlines()) if line.strip().startswith("{")]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and any(k in data for k in ("passed", "failed", "errors", "error", "total")):

            def num(name: str, data: dict[str, Any] = data) -> int:
                value = data.get(name)
                return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

            errors = num("errors") or num("error")
            total = num("total") or None
            return _counts(num("passed"), num("failed"), errors, total)
    return None


def _junit_counts(text: str) -> dict[str, int] | None:
    suites = _SUITE.findall(text)
    if not suites:
        return None
    # A <testsuites> root carries the totals when it has counts; pytest's has none (only a name),
    # so the <testsuite> elements inside it are summed instead.
    totals = [attrs for tag, attrs in suites if tag == "testsuites" and any(k == "tests" for k, _ in _ATTR.findall(attrs))]
    chosen = totals[:1] or [a for t, a in suites if t == "testsuite"]
    tests = failures = errors = skipped = 0
    for attrs in chosen:
        values = {k: int(v) for k, v in _ATTR.findall(attrs)}
        tests += values.get("tests", 0)
        failures += values.get("failures", 0)
        errors += values.get("errors", 0)
        skipped += values.get("skipped", 0)
    return _counts(max(0, tests - failures - errors - skipped), failures, errors, tests - skipped)


def _text_counts(text: str) -> dict[str, int] | None:
    summary = None
    for line in text.splitlines():
        if _COUNT.search(line):
            summary = line  # the summary line comes last (pytest, jest)
    if summary is not None:
        found: dict[str, int] = {}
        for number, word in _COUNT.findall(summary):
            word = word.lower()
            found["errors" if word.startswith("error") else word] = int(number)
        return _counts(found.get("passed", 0), found.get("failed", 0), found.get("errors", 0), found.get("total"))
    go = _GO_RESULT.findall(text)
    if go:
        return _counts(go.count("PASS"), go.count("FAIL"), 0)
    return None


def parse_test_counts(text: str) -> dict[str, int] | None:
    """Test counts from a results file: a JSON summary, JUnit XML, or pytest/jest/go text output."""
    for parser in (_json_counts, _junit_counts, _text_counts):
        counts = parser(text)
        if counts is not None:
            return counts
    return None


def check_config(config: dict[str, JSON]) -> tuple[str, float, float]:
    strict_keys(config, {"test_command", "timeout_ms", "scoring", "pass_threshold"})
    command = config.get("test_command")
    if not isinstance(command, str) or not command.strip():
        raise PackError("config.test_command is required")
    scoring = config.get("scoring") or "fraction_passed"
    if scoring not in SCORING_MODES:
        raise PackError("config.scoring must be one of fraction_passed, all_or_nothing, pass_at_k")
    if scoring == "pass_at_k":
        raise PackError("config.scoring pass_at_k requires multi-sample execution and is not supported yet")
    timeout_ms = config_float(config, "timeout_ms", DEFAULT_TIMEOUT_MS, lo=1e-9, hi=float("inf"))
    threshold = config_float(config, "pass_threshold", 1.0, lo=0.0, hi=1.0)
    return scoring, threshold, timeout_ms


def _recorded_counts(value: JSON) -> dict[str, int] | None:
    """The test counts a code execution result recorded (``parse_test_counts``'s, so numbers)."""
    if not isinstance(value, dict):
        return None
    return {key: count for key, count in value.items() if isinstance(count, int) and not isinstance(count, bool)}


@register("code_execution")
def code_execution(call: ValidatorCall) -> Outcome:
    scoring, threshold, _ = check_config(call.config)
    call.file_key()
    result = call.extracted.code_executions.get(call.key)
    call.event_id = call.extracted.verification_event_ids.get("code:" + call.key)
    if result is None:
        raise call.no_verification("no code execution result (verification did not run)")
    if result.get("execution_error"):
        raise InfraError(f"test command could not run: {result['execution_error']}")
    summary = {k: result.get(k) for k in ("exit_code", "timed_out", "test_counts")}
    if result.get("timed_out"):
        return Outcome(False, 0.0, "test command timed out", threshold, summary)
    exit_code = result.get("exit_code")
    if exit_code != 0 or isinstance(exit_code, bool):
        return Outcome(False, 0.0, f"test command exited with {exit_code} (the exit status decides)", threshold, summary)
    if result.get("results_error"):
        return Outcome(False, 0.0, f"test command exited 0 but {result['results_error']}", threshold, summary)
    score, reason = _lowered(scoring, _recorded_counts(result.get("test_counts")))
    return Outcome(score >= threshold, score, reason, threshold, summary)


def _lowered(scoring: str, counts: dict[str, int] | None) -> tuple[float, str]:
    """The score of a check that exited 0: 1.0, lowered (never raised) by its results file's counts."""
    if counts is None:
        return 1.0, "exit code 0 (no results file)"
    passed, total = counts.get("passed", 0), counts.get("total", 0)
    if total <= 0:
        return 0.0, "exit code 0, but the results file reports no tests"
    if scoring == "all_or_nothing":
        score = 1.0 if counts.get("failed", 0) == 0 and counts.get("errors", 0) == 0 else 0.0
    else:
        score = max(0.0, min(1.0, passed / total))
    return score, f"exit code 0, {passed}/{total} tests passed (results file)"
