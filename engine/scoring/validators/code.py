"""code_execution: score the test command that verification ran in the sandbox (§5.4)."""

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
    chosen = [attrs for tag, attrs in suites if tag == "testsuites"][:1] or [a for t, a in suites if t == "testsuite"]
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


def parse_test_counts(stdout: str, stderr: str = "") -> dict[str, int] | None:
    """Test counts from a JSON summary, JUnit XML, or pytest/jest/go text output."""
    for text in (stdout, stdout + "\n" + stderr):
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
    counts = _recorded_counts(result.get("test_counts")) or parse_test_counts(
        str(result.get("stdout") or ""), str(result.get("stderr") or "")
    )
    exit_code = result.get("exit_code")
    if counts and counts.get("total"):
        if scoring == "all_or_nothing":
            score = 1.0 if counts["failed"] == 0 and counts["errors"] == 0 else 0.0
        else:
            score = counts["passed"] / counts["total"]
        reason = f"{counts['passed']}/{counts['total']} tests passed"
    else:
        score = 1.0 if exit_code == 0 else 0.0
        reason = f"exit code {exit_code} (no test counts found)"
    summary["test_counts"] = None if counts is None else {**counts}
    return Outcome(score >= threshold, score, reason, threshold, summary)
