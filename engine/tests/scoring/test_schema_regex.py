"""json_schema patterns run on RE2: an agent's output cannot make scoring backtrack (issue 14)."""

from __future__ import annotations

import json
import time

import pytest

from engine.scoring.validators.base import PackError
from engine.scoring.validators.structured import schema_outcome, schema_validator

EVIL = "^(a+)+$"
ATTACK = "a" * 40 + "!"


@pytest.mark.parametrize(
    "schema, instance, passed",
    [
        ({"type": "string", "pattern": EVIL}, ATTACK, False),
        ({"type": "object", "patternProperties": {EVIL: {"type": "string"}}}, {ATTACK: 1}, True),  # the key does not match
        ({"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}, {ATTACK: 1}, False),
    ],
)
def test_catastrophic_schema_patterns_are_linear(schema, instance, passed):
    validator = schema_validator(schema)
    start = time.monotonic()
    outcome = schema_outcome(validator, json.dumps(instance))
    assert time.monotonic() - start < 0.5
    assert outcome.passed is passed


def test_patterns_still_validate():
    validator = schema_validator({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+-\\d+$"}}})
    assert "matches" in schema_outcome(validator, '{"id": "abc-12"}').reason
    assert "does not match" in schema_outcome(validator, '{"id": "ABC"}').reason
    strict = schema_validator({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False})
    assert "matches" in schema_outcome(strict, '{"x-a": 1}').reason
    assert "do not match any of the regexes" in schema_outcome(strict, '{"x-a": 1, "y": 2, "z": 3}').reason


def test_patterns_re2_cannot_run_are_pack_errors():
    with pytest.raises(PackError, match="RE2"):
        schema_validator({"type": "string", "pattern": "(a)\\1"})
