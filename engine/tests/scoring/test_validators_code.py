from __future__ import annotations

from engine.scoring.validators.code import parse_test_counts
from engine.tests.scoring.helpers import validate

CONFIG = {"test_command": "pytest -q"}


def run(result: dict | None, config: dict | None = None):
    executions = {"v": result} if result is not None else {}
    return validate(
        "code_execution", target="file:solution", expected=None, config=CONFIG if config is None else config, code_executions=executions
    )


def test_it_scores_the_fraction_of_passed_tests():
    result = run({"exit_code": 1, "stdout": "==== 1 failed, 3 passed in 0.2s ====", "stderr": ""})
    assert result.normalized_score == 0.75
    assert result.verdict == "fail"  # default pass_threshold is 1.0


def test_pass_threshold_decides_the_verdict():
    result = run({"exit_code": 1, "stdout": "1 failed, 3 passed"}, {**CONFIG, "pass_threshold": 0.7})
    assert result.verdict == "pass"


def test_all_or_nothing_needs_zero_failures():
    config = {**CONFIG, "scoring": "all_or_nothing"}
    assert run({"exit_code": 0, "stdout": "5 passed"}, config).normalized_score == 1.0
    assert run({"exit_code": 1, "stdout": "4 passed, 1 error"}, config).normalized_score == 0.0


def test_it_falls_back_to_the_exit_code_without_counts():
    assert run({"exit_code": 0, "stdout": "OK"}).verdict == "pass"
    assert run({"exit_code": 1, "stdout": "Traceback"}).verdict == "fail"


def test_timeouts_score_zero():
    result = run({"exit_code": None, "timed_out": True, "stdout": "5 passed"})
    assert (result.verdict, result.normalized_score) == ("fail", 0.0)


def test_missing_result_is_unavailable_and_execution_errors_are_infra_errors():
    assert run(None).state == "unavailable"
    assert run({"execution_error": "sandbox gone"}).outcome_class == "infra_error"


def test_broken_configs_are_pack_errors():
    assert run({"exit_code": 0}, {}).outcome_class == "pack_error"
    assert run({"exit_code": 0}, {**CONFIG, "scoring": "pass_at_k"}).outcome_class == "pack_error"
    assert run({"exit_code": 0}, {**CONFIG, "pass_threshold": 3}).outcome_class == "pack_error"


def test_it_parses_json_junit_pytest_jest_and_go_summaries():
    assert parse_test_counts('{"passed": 2, "failed": 1, "total": 3}') == {"passed": 2, "failed": 1, "errors": 0, "total": 3}
    junit = '<testsuite name="x" tests="4" failures="1" errors="1" skipped="0">'
    assert parse_test_counts(junit) == {"passed": 2, "failed": 1, "errors": 1, "total": 4}
    assert parse_test_counts("== 2 failed, 8 passed, 1 error in 1.2s ==")["errors"] == 1
    jest = "Tests:       1 failed, 2 passed, 3 total"
    assert parse_test_counts(jest) == {"passed": 2, "failed": 1, "errors": 0, "total": 3}
    go = "=== RUN TestA\n--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL"
    assert parse_test_counts(go) == {"passed": 1, "failed": 1, "errors": 0, "total": 2}
    assert parse_test_counts("no summary here") is None
