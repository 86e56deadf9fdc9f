from __future__ import annotations

import pytest

from engine.tests.scoring.helpers import validate


def test_exact_match_passes_on_identical_bytes():
    result = validate("exact_match", "42", "literal:42")
    assert (result.verdict, result.normalized_score, result.outcome_class) == ("pass", 1.0, "pass")


def test_exact_match_does_not_trim_whitespace():
    result = validate("exact_match", "42 ", "literal:42")
    assert (result.verdict, result.normalized_score) == ("fail", 0.0)


def test_exact_match_points_at_the_event_holding_the_final_output():
    assert validate("exact_match", "42", "literal:42").evidence_event_id == "e4"


def test_contains_finds_a_substring():
    assert validate("contains", "the answer is 42.", "literal:42").verdict == "pass"
    assert validate("contains", "the answer is 41.", "literal:42").verdict == "fail"


def test_regex_match_uses_re2_and_searches_anywhere():
    assert validate("regex_match", "Order ORD-12 refunded", "literal:(?i)refund").verdict == "pass"
    assert validate("regex_match", "nothing", "literal:^\\d+$").verdict == "fail"


def test_regex_match_reports_a_bad_pattern_as_pack_error():
    result = validate("regex_match", "x", "literal:(unclosed")
    assert (result.verdict, result.state, result.outcome_class) == ("error", "error", "pack_error")


def test_regex_match_rejects_backreferences_that_re2_does_not_support():
    assert validate("regex_match", "aa", "literal:(a)\\1").outcome_class == "pack_error"


def test_boolean_assert_parses_yes_no_words():
    assert validate("boolean_assert", " YES ", "literal:true").verdict == "pass"
    assert validate("boolean_assert", "0", "literal:true").verdict == "fail"


def test_boolean_assert_errors_on_an_unparseable_answer():
    result = validate("boolean_assert", "maybe", "literal:true")
    assert (result.verdict, result.outcome_class) == ("error", "evaluator_error")


def test_boolean_assert_blames_the_pack_for_an_unparseable_expectation():
    assert validate("boolean_assert", "yes", "literal:perhaps").outcome_class == "pack_error"


def test_missing_final_output_fails_when_the_agent_ended_the_run():
    for stop in ({}, {"status": "failed", "stop_reason": "agent_error"}, {"status": "failed", "stop_reason": "deadline_exceeded"}):
        result = validate("exact_match", None, "literal:42", events=[], **stop)
        assert (result.state, result.outcome_class, result.normalized_score) == ("available", "fail", 0.0), stop
        assert "the agent did not deliver: final output is missing" in result.reason


@pytest.mark.parametrize("stop", ["provider_error", "sandbox_error", "simulator_error"])
def test_missing_final_output_is_unavailable_when_the_harness_ended_the_run(stop):
    result = validate("exact_match", None, "literal:42", events=[], status="failed", stop_reason=stop)
    assert (result.state, result.outcome_class, result.normalized_score) == ("unavailable", "unavailable", None)
    cancelled = validate("exact_match", None, "literal:42", events=[], status="cancelled", stop_reason="cancelled")
    assert cancelled.state == "unavailable"


def test_unknown_reference_is_a_pack_error():
    result = validate("exact_match", "42", "nonsense.ref")
    assert result.outcome_class == "pack_error"
    assert "unknown evidence reference" in result.reason


def test_unknown_validator_type_is_a_pack_error():
    assert validate("telepathy", "42").outcome_class == "pack_error"


def test_expected_from_case_expectation_is_resolved():
    assert validate("exact_match", "42", "case.expectations.answer").verdict == "pass"
