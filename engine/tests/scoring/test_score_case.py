from __future__ import annotations

import copy
from typing import Any

from engine.scoring import CaseEvidence, score_case
from engine.scoring.spec import ValidatorDeclaration
from engine.tests.scoring.helpers import evidence, spec
from engine.types import JSON

BROKEN: ValidatorDeclaration = {"key": "re", "type": "regex_match", "target": "final_output", "expected_from": "literal:("}
MISSING: ValidatorDeclaration = {"key": "f", "type": "contains", "target": "file:nope", "expected_from": "literal:x"}


def test_a_clean_case_is_valid_complete_and_passed():
    result = score_case(spec(), evidence("42")).as_dict()
    assert (result["validity"], result["status"], result["passed"], result["overall_score"]) == ("valid", "complete", True, 1.0)
    assert result["validator_summary"] == {"total": 1, "available": 1, "unavailable": 0, "error": 0, "pass": 1, "fail": 0}


def test_an_errored_validator_makes_the_case_invalid_and_names_it():
    result = score_case(spec([BROKEN], ["correctness"]), evidence("42")).as_dict()
    assert result["validity"] == "invalid"
    assert "validator 're'" in result["validity_reason"]
    assert result["status"] == "partial"


def test_an_unavailable_validator_makes_the_case_degraded():
    result = score_case(spec([MISSING], ["correctness"]), evidence("42")).as_dict()
    assert result["validity"] == "degraded"


def test_an_unknown_collector_makes_the_case_invalid():
    s = spec(metrics=[{"key": "m", "type": "numeric", "collector": "nope"}])
    assert score_case(s, evidence("42")).as_dict()["validity"] == "invalid"


def test_scoring_accepts_evidence_as_a_plain_dict():
    ev: dict[str, JSON] = {"case_key": "c", "final_output": "42", "status": "completed", "unknown_field": 1}
    assert score_case(spec(), ev).as_dict()["passed"] is True


def test_garbage_specs_never_raise():
    bad: Any  # malformed on purpose
    for bad in (
        {},
        {"validators": [None, 3, {"type": None}]},
        {"scorecard": {"dimensions": [None, {}, 7]}},
        {"metrics": [None], "behavioral": "x", "llm_judges": [None, {"key": "j"}], "judge_mode": "hybrid"},
    ):
        result = score_case(bad, CaseEvidence(case_key="c")).as_dict()
        assert result["validity"] in ("valid", "degraded", "invalid")


def test_scoring_is_idempotent_and_does_not_mutate_inputs():
    s = spec(dimensions=["correctness", "reliability"])
    ev = evidence("42")
    before = (copy.deepcopy(s), copy.deepcopy(ev))
    assert score_case(s, ev).as_dict() == score_case(s, ev).as_dict()
    assert (s, ev) == before
