"""Gate regression rules (issue 13): reason codes, severities, suite restriction, summaries."""

from __future__ import annotations

from engine.scoring.documents import GateResultDocument
from engine.scoring.gates import evaluate_gate

from .test_gates import comparison

RULES = {
    "no_blocking_regression_failure": True,
    "no_new_blocking_failure_vs_baseline": True,
    "max_warning_regression_failures": 1,
}


def policy(**rules) -> dict:
    return {"required_dimensions": [], "dimensions": {}, "regression_gate_rules": rules or RULES}


def entry(case_id: int, *, failed: bool, severity: str = "blocking", suite_id: int = 1) -> dict:
    return {"regression_case_id": case_id, "suite_id": suite_id, "severity": severity, "failed": failed}


def gate(candidate, baseline=None, **rules) -> GateResultDocument:
    return evaluate_gate(comparison(regression={"candidate": candidate, "baseline": baseline}), policy(**rules))


def test_a_failing_blocking_case_fails_with_the_regression_reason_and_names_the_case():
    result = gate([entry(4, failed=True), entry(5, failed=False)], [entry(4, failed=True), entry(5, failed=False)])
    assert (result["verdict"], result["reason_code"]) == ("fail", "regression_blocking_failure")
    assert result["summary"] == "regression rule failed: regression_blocking_failure: 1 blocking regression case(s) fail (4)"
    conditions = {t["condition"]: t for t in result["triggered_conditions"]}
    assert conditions["no_blocking_regression_failure"]["cases"] == ["4"]
    assert "no_new_blocking_failure_vs_baseline" not in conditions  # it failed in the baseline too


def test_a_new_blocking_failure_versus_the_baseline_has_its_own_reason():
    result = gate([entry(4, failed=True)], [entry(4, failed=False)], no_new_blocking_failure_vs_baseline=True)
    assert (result["verdict"], result["reason_code"]) == ("fail", "regression_new_blocking_failure")


def test_warning_failures_over_the_budget_warn_and_info_cases_never_gate():
    warned = [entry(1, failed=True, severity="warning"), entry(2, failed=True, severity="warning"), entry(3, failed=True, severity="info")]
    result = gate(warned)
    assert (result["verdict"], result["reason_code"]) == ("warn", "regression_warning_budget_exceeded")
    assert gate(warned[1:])["verdict"] == "pass"  # one warning is within the budget; the info case does not count


def test_suite_ids_restrict_the_rules_whatever_the_id_type():
    failing_elsewhere = [entry(4, failed=True, suite_id=2), entry(5, failed=False, suite_id=1)]
    assert gate(failing_elsewhere, no_blocking_regression_failure=True, suite_ids=[1])["verdict"] == "pass"
    assert gate(failing_elsewhere, no_blocking_regression_failure=True, suite_ids=["2"])["verdict"] == "fail"


def test_no_regression_cases_in_the_candidate_is_insufficient_evidence():
    result = gate(None)
    assert (result["verdict"], result["reason_code"]) == ("insufficient_evidence", "regression_evidence_missing")
