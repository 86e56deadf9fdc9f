"""Classifying one case's failure (regression/failures/classify.py): classes, precedence, fingerprints, severities."""

from __future__ import annotations

from engine.events import SANDBOX_EGRESS_DENIED, TOOL_CALL_FAILED
from regression.failures.classify import (
    AGENT_ERROR,
    POLICY_DENIAL,
    RUN_ERROR,
    SECURITY_FINDING,
    TIMEOUT,
    TOOL_FAILURE,
    VALIDATOR_ERROR,
    WRONG_ANSWER,
    CaseFacts,
    EventFact,
    classify,
    fingerprint,
)


def validator(key, verdict="fail", state="available", type_="exact_match", event_id="ev-1", reason="expected 9, got 10"):
    return {"key": key, "type": type_, "verdict": verdict, "state": state, "reason": reason, "evidence_event_id": event_id}


def dimension(score, *, gate=False, threshold=None, source="validators", state="available"):
    return {"score": score, "gate": gate, "pass_threshold": threshold, "source": source, "state": state, "reason": ""}


def document(validators=(), dimensions=None, passed=False, reason="", security=None, strategy="weighted"):
    return {
        "passed": passed,
        "strategy": strategy,
        "overall_reason": reason,
        "validator_details": list(validators),
        "dimensions": dimensions or {},
        "security": security,
    }


def facts(status="completed", **kwargs):
    return CaseFacts(status=status, **kwargs)


WRONG = document([validator("answer")], {"correctness": dimension(0.0, gate=True, threshold=1.0)}, reason="gate 'correctness' scored 0.000")


def test_a_validator_that_ran_and_failed_is_a_wrong_answer():
    failure = classify(facts(passed=False, document=WRONG))
    assert failure is not None
    assert failure.failure_class == WRONG_ANSWER
    assert failure.title == "Wrong answer · exact_match(answer)"
    assert failure.severity == "blocking"  # the gate failed
    assert [v["key"] for v in failure.failed_validators] == ["answer"]
    assert [d["key"] for d in failure.failed_dimensions] == ["correctness"]
    assert failure.evidence_event_id == "ev-1"
    assert failure.reason == "expected 9, got 10"


def test_a_validator_that_could_not_run_is_a_validator_error_not_a_wrong_answer():
    doc = document([validator("answer"), validator("schema", verdict="error", state="error", type_="json_schema", event_id="")])
    failure = classify(facts(passed=False, document=doc))
    assert failure is not None and failure.failure_class == VALIDATOR_ERROR
    assert failure.title == "Validator error · json_schema(schema)"
    unavailable = document([validator("answer", verdict="fail", state="unavailable")])
    assert classify(facts(passed=False, document=unavailable)).failure_class == VALIDATOR_ERROR


def test_a_required_dimension_that_could_not_be_scored_is_a_validator_error():
    doc = document(dimensions={"quality": dimension(None, gate=True, threshold=0.7, source="llm_judge", state="unavailable")})
    failure = classify(facts(passed=False, document=doc))
    assert failure.failure_class == VALIDATOR_ERROR and failure.title == "Validator error · quality"


def test_timeouts_and_limits_share_a_class_but_not_a_cluster():
    timeout = classify(facts(status="failed", stop_reason="timeout", error="run timed out", document=WRONG))
    steps = classify(facts(status="failed", stop_reason="step_limit", error="reached step limit of 5", document=WRONG))
    assert timeout.failure_class == steps.failure_class == TIMEOUT
    assert timeout.fingerprint != steps.fingerprint
    assert timeout.severity == "blocking" and timeout.reason == "run timed out"


def test_a_reply_without_a_tool_call_is_an_agent_error_not_a_run_error():
    failure = classify(facts(status="failed", stop_reason="agent_error", error="assistant response did not contain a tool call or submit action",
                             document=WRONG))  # fmt: skip
    assert failure.failure_class == AGENT_ERROR
    assert failure.title == "Agent error · agent_error"
    assert failure.severity == "blocking"
    harness = classify(facts(status="failed", stop_reason="sandbox_error", error="sandbox failed"))
    assert harness.failure_class == RUN_ERROR and harness.fingerprint != failure.fingerprint


def test_a_provider_error_is_a_run_error_fingerprinted_by_its_code():
    failure = classify(facts(status="failed", stop_reason="provider_error", error="provider rate_limit: slow down",
                             provider_failure={"code": "rate_limit"}))  # fmt: skip
    assert failure.failure_class == RUN_ERROR
    assert failure.title == "Run error · provider_error (rate_limit)"
    other = classify(facts(status="failed", stop_reason="provider_error", provider_failure={"code": "auth"}))
    assert other.fingerprint != failure.fingerprint


def test_a_failed_tool_call_is_a_tool_failure_and_outranks_the_wrong_answer_it_caused():
    events = (EventFact(TOOL_CALL_FAILED, "ev-tool", tool_name="read_file", failure_origin="primitive"),)
    failure = classify(facts(passed=False, document=WRONG, events=events))
    assert failure.failure_class == TOOL_FAILURE
    assert failure.title == "Tool failure · tool read_file failed"
    assert failure.evidence_event_id == "ev-tool"
    assert [v["key"] for v in failure.failed_validators] == ["answer"]  # still listed


def test_a_denied_tool_or_egress_is_a_policy_denial_and_blocking_even_when_the_case_passed():
    events = (
        EventFact(TOOL_CALL_FAILED, "ev-1", tool_name="shell_exec", failure_origin="policy"),
        EventFact(SANDBOX_EGRESS_DENIED, "ev-2", host="evil.example"),
        EventFact(TOOL_CALL_FAILED, "ev-3", tool_name="read_file", failure_origin="primitive"),
    )
    failure = classify(facts(passed=True, document=document(passed=True), events=events))
    assert failure.failure_class == POLICY_DENIAL and failure.severity == "blocking"
    assert failure.title == "Policy denial · egress to evil.example denied, tool shell_exec denied"


def test_a_corrected_tool_name_typo_is_an_info_tool_failure_not_a_policy_denial():
    """Issue 22 item 5: ``restart_servise`` then ``restart_service``, and the case passed."""
    events = (EventFact(TOOL_CALL_FAILED, "ev-1", tool_name="restart_servise", failure_origin="unknown_tool"),)
    failure = classify(facts(passed=True, document=document(passed=True), events=events))
    assert failure.failure_class == TOOL_FAILURE and failure.severity == "info"
    assert failure.title == "Tool failure · tool restart_servise failed"


def test_a_blocking_security_finding_outranks_everything():
    security = {"findings": [{"kind": "planted_secret_leaked", "severity": "critical", "subject": "DB_PASSWORD", "event_id": "ev-leak"}]}
    events = (EventFact(TOOL_CALL_FAILED, "ev-1", tool_name="shell_exec", failure_origin="policy"),)
    doc = document([validator("answer")], security=security, reason="security: leaked DB_PASSWORD")
    failure = classify(facts(status="failed", stop_reason="timeout", passed=False, document=doc, events=events))
    assert failure.failure_class == SECURITY_FINDING and failure.severity == "blocking"
    assert failure.title == "Security finding · planted_secret_leaked(DB_PASSWORD)"
    assert failure.evidence_event_id == "ev-leak"


def test_a_low_finding_alone_on_a_passed_case_is_info():
    security = {"findings": [{"kind": "forbidden_output", "severity": "low", "subject": "profanity"}]}
    failure = classify(facts(passed=True, document=document(passed=True, security=security)))
    assert failure.failure_class == SECURITY_FINDING and failure.severity == "info"


def test_a_passed_case_with_a_failed_non_required_check_is_info():
    doc = document([validator("answer", "pass"), validator("style", type_="regex")], passed=True, reason="passed")
    failure = classify(facts(passed=True, document=doc))
    assert failure.failure_class == WRONG_ANSWER and failure.severity == "info"


def test_a_case_failed_only_by_its_overall_threshold_is_a_warning():
    doc = document([validator("style", type_="regex")], {"style": dimension(0.0)}, reason="score 0.400 is below the pass threshold 0.5")
    assert classify(facts(passed=False, document=doc)).severity == "warning"


def test_a_case_that_failed_for_no_named_check_is_a_wrong_answer_on_its_overall_verdict():
    doc = document(dimensions={"latency": dimension(0.2, source="latency")}, reason="score 0.200 is below the pass threshold 0.5")
    failure = classify(facts(passed=False, document=doc))
    assert failure.failure_class == WRONG_ANSWER and failure.title == "Wrong answer · overall verdict"


def test_nothing_to_review_for_passed_cancelled_or_unscored_cases():
    assert classify(facts(passed=True, document=document([validator("answer", "pass")], passed=True))) is None
    assert classify(facts(status="cancelled", stop_reason="cancelled")) is None
    assert classify(facts(status="failed", stop_reason="cancelled", error="the run is cancelled")) is None
    assert classify(facts(status="completed", scored=False)) is None
    assert classify(facts(status="running")) is None


def test_the_fingerprint_is_stable_and_ignores_order_and_lanes():
    assert fingerprint(WRONG_ANSWER, ["validator:b", "validator:a"]) == fingerprint(WRONG_ANSWER, ["validator:a", "validator:b"])
    assert fingerprint(WRONG_ANSWER, ["validator:a"]) != fingerprint(VALIDATOR_ERROR, ["validator:a"])
    assert len(fingerprint(WRONG_ANSWER, [])) == 12
    one = classify(facts(passed=False, document=WRONG))
    two = classify(facts(passed=False, document=document([validator("answer", event_id="other", reason="expected 4, got 5")])))
    assert one.fingerprint == two.fingerprint  # the same check failed: one cluster, whatever the evidence
