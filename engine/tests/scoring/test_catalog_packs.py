from __future__ import annotations

import glob
import json

import pytest
import yaml

from engine.scoring import CaseEvidence, aggregate_lane, score_case
from engine.tests.scoring.helpers import FakeJudge, run_events

PACKS = sorted(glob.glob("/work/shared/packs/catalog/*.yaml"))


def first_case(pack: dict) -> dict:
    for input_set in pack.get("input_sets") or []:
        for case in input_set.get("cases") or []:
            return case
    return {}


@pytest.mark.skipif(not PACKS, reason="catalog packs are not available")
@pytest.mark.parametrize("path", PACKS, ids=lambda p: p.rsplit("/", 1)[-1])
def test_catalog_pack_specs_score_synthetic_evidence_without_raising(path):
    pack = yaml.safe_load(open(path, encoding="utf-8"))
    spec = pack["version"]["evaluation_spec"]
    case = first_case(pack)
    events = run_events('{"answer": "x"}', model="claude-sonnet-4-6").items
    evidence = CaseEvidence(
        case_key=case.get("case_key", "c"),
        final_output='{"answer": "x"}',
        events=events,
        case={k: case.get(k) for k in ("payload", "inputs", "expectations")},
        captured_files={
            c["key"]: {"path": c["path"], "exists": True, "content": "SELECT 1", "size": 8, "truncated": False}
            for c in spec.get("post_execution_checks") or []
        },
        code_executions={
            v["key"]: {"exit_code": 0, "stdout": "OK", "stderr": "", "timed_out": False}
            for v in spec["validators"]
            if v["type"] == "code_execution"
        },
    )
    judge = FakeJudge([json.dumps({"score": 4, "pass": True, "confidence": "high", "reasoning": "ok"})])
    result = score_case(spec, evidence, judge=judge).as_dict()
    assert result["validity"] in ("valid", "degraded", "invalid")
    assert not [v for v in result["validator_details"] if v["outcome_class"] == "evaluator_error"]
    json.dumps(result)
    assert aggregate_lane(spec, [result])["case_counts"]["total"] == 1
