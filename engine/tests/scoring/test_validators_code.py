from __future__ import annotations

import pytest

from engine.scoring.validators.code import parse_test_counts
from engine.tests.scoring.helpers import validate

CONFIG = {"test_command": "pytest -q"}


def run(result: dict | None, config: dict | None = None):
    executions = {"v": result} if result is not None else {}
    return validate(
        "code_execution", target="file:solution", expected=None, config=CONFIG if config is None else config, code_executions=executions
    )


def counts(passed: int, failed: int = 0, errors: int = 0, total: int | None = None) -> dict:
    return {"passed": passed, "failed": failed, "errors": errors, "total": passed + failed + errors if total is None else total}


def test_the_results_file_counts_lower_the_score_of_a_check_that_exited_zero():
    result = run({"exit_code": 0, "stdout": "", "test_counts": counts(3, 1)})
    assert result.normalized_score == 0.75
    assert result.verdict == "fail"  # default pass_threshold is 1.0


def test_pass_threshold_decides_the_verdict():
    result = run({"exit_code": 0, "test_counts": counts(3, 1)}, {**CONFIG, "pass_threshold": 0.7})
    assert result.verdict == "pass"


def test_all_or_nothing_needs_zero_failures():
    config = {**CONFIG, "scoring": "all_or_nothing"}
    assert run({"exit_code": 0, "test_counts": counts(5)}, config).normalized_score == 1.0
    assert run({"exit_code": 0, "test_counts": counts(4, errors=1)}, config).normalized_score == 0.0


def test_the_exit_status_decides_without_counts():
    assert run({"exit_code": 0, "stdout": "OK"}).verdict == "pass"
    assert run({"exit_code": 1, "stdout": "Traceback"}).verdict == "fail"


@pytest.mark.parametrize(
    "printed",
    [
        {"stdout": "==== 10 passed in 0.2s ===="},
        {"stdout": '{"passed": 7, "failed": 0, "errors": 0, "total": 7}'},
        {"stderr": "AssertionError: got [('9 passed',)], expected [('Carol',), ('Alice',)]"},
        {"stdout": '<testsuite tests="4" failures="0" errors="0">'},
    ],
)
def test_a_non_zero_exit_fails_whatever_was_printed(printed):
    result = run({"exit_code": 1, "stdout": "", "stderr": "", **printed})
    assert (result.verdict, result.normalized_score) == ("fail", 0.0)


def test_a_non_zero_exit_fails_even_with_passing_counts_recorded():
    # counts recorded by an older verification (parsed from stdout) never beat the exit status
    result = run({"exit_code": 1, "stdout": "10 passed", "test_counts": counts(10)})
    assert (result.verdict, result.normalized_score) == ("fail", 0.0)


@pytest.mark.parametrize("exit_code", [None, 2, 124, 137, -9, True])
def test_a_crash_a_kill_or_no_exit_status_fails(exit_code):
    assert run({"exit_code": exit_code, "test_counts": counts(5)}).normalized_score == 0.0


def test_counts_never_raise_a_score():
    assert run({"exit_code": 0, "test_counts": counts(12, total=10)}).normalized_score == 1.0
    assert run({"exit_code": 0, "test_counts": counts(-5, total=10)}).normalized_score == 0.0
    assert run({"exit_code": 0, "test_counts": counts(0, total=0)}).normalized_score == 0.0  # no test ran


def test_a_results_file_that_could_not_be_read_fails_the_check():
    result = run({"exit_code": 0, "results_error": "the results file holds no test counts"})
    assert (result.verdict, result.normalized_score) == ("fail", 0.0)


def test_timeouts_score_zero():
    result = run({"exit_code": 0, "timed_out": True, "test_counts": counts(5)})
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


def test_it_sums_the_suites_of_a_pytest_junit_report_whose_root_has_no_counts():
    report = (
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" '
        'failures="1" skipped="1" tests="4" time="0.03"><testcase classname="t" name="a"/></testsuite></testsuites>'
    )
    assert parse_test_counts(report) == {"passed": 2, "failed": 1, "errors": 0, "total": 3}
    totals = '<testsuites tests="5" failures="2"><testsuite tests="3" failures="1"/><testsuite tests="2" failures="1"/></testsuites>'
    assert parse_test_counts(totals) == {"passed": 3, "failed": 2, "errors": 0, "total": 5}
