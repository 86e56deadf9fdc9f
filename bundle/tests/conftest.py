from __future__ import annotations

import copy
from typing import Any

import pytest

BASE: dict[str, Any] = {
    "pack": {"slug": "demo", "name": "Demo", "family": "coding"},
    "version": {
        "number": 1,
        "execution_mode": "native",
        "evaluation_spec": {
            "name": "spec",
            "version_number": 1,
            "judge_mode": "deterministic",
            "validators": [{"key": "exact", "type": "exact_match", "target": "final_output", "expected_from": "case.expectations.answer"}],
            "scorecard": {"dimensions": ["correctness"]},
        },
    },
    "challenges": [{"key": "c1", "title": "Challenge", "category": "demo", "difficulty": "easy", "instructions": "Do it"}],
    "input_sets": [
        {
            "key": "s1",
            "name": "Set",
            "cases": [{"challenge_key": "c1", "case_key": "k1", "expectations": [{"key": "answer", "kind": "text", "value": "42"}]}],
        }
    ],
}


@pytest.fixture
def bundle() -> dict[str, Any]:
    return copy.deepcopy(BASE)
