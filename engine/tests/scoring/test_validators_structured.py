from __future__ import annotations

import json

from engine.tests.scoring.helpers import validate

SCHEMA = json.dumps({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}})


def test_json_schema_passes_a_matching_document():
    assert validate("json_schema", '{"a": 1}', "literal:" + SCHEMA).verdict == "pass"


def test_json_schema_fails_with_the_validation_error_as_reason():
    result = validate("json_schema", '{"a": "x"}', "literal:" + SCHEMA)
    assert result.verdict == "fail"
    assert "$.a" in result.reason


def test_json_schema_fails_when_output_is_not_one_json_document():
    assert validate("json_schema", '{"a": 1} trailing', "literal:" + SCHEMA).verdict == "fail"


def test_json_schema_accepts_draft_07_and_rejects_other_drafts():
    draft7 = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})
    draft4 = json.dumps({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"})
    assert validate("json_schema", "{}", "literal:" + draft7).verdict == "pass"
    assert validate("json_schema", "{}", "literal:" + draft4).outcome_class == "pack_error"


def test_json_schema_with_an_invalid_schema_is_a_pack_error():
    assert validate("json_schema", "{}", 'literal:{"type": 12}').outcome_class == "pack_error"
    assert validate("json_schema", "{}", "literal:not json").outcome_class == "pack_error"


def path_spec(**kwargs) -> str:
    return "literal:" + json.dumps(kwargs)


def test_json_path_match_bare_path_means_exists():
    assert validate("json_path_match", '{"tags": ["x"]}', "literal:$.tags[0]").verdict == "pass"
    assert validate("json_path_match", '{"tags": []}', "literal:$.tags[0]").verdict == "fail"


def test_json_path_match_equals_compares_numbers_numerically():
    assert validate("json_path_match", '{"total": 15.0}', path_spec(path="$.total", value=15)).verdict == "pass"


def test_json_path_match_equals_does_not_confuse_true_with_one():
    assert validate("json_path_match", '{"ok": 1}', path_spec(path="$.ok", comparator="equals", value=True)).verdict == "fail"


def test_json_path_match_supports_quoted_and_indexed_segments():
    doc = json.dumps({"a-b": {"items": [{"x y": 3}]}})
    assert validate("json_path_match", doc, path_spec(path="$.a-b.items[0]['x y']", value=3)).verdict == "pass"
    assert validate("json_path_match", doc, path_spec(path='$["a-b"].items[0]["x y"]', value=3)).verdict == "pass"


def test_json_path_match_contains_on_strings_arrays_and_objects():
    doc = json.dumps({"s": "hello world", "l": [1, 2], "o": {"k": "v"}})
    assert validate("json_path_match", doc, path_spec(path="$.s", comparator="contains", value="world")).verdict == "pass"
    assert validate("json_path_match", doc, path_spec(path="$.l", comparator="contains", value=2)).verdict == "pass"
    assert validate("json_path_match", doc, path_spec(path="$.o", comparator="contains", value="v")).verdict == "pass"


def test_json_path_match_greater_and_less_than():
    doc = '{"n": 5}'
    assert validate("json_path_match", doc, path_spec(path="$.n", comparator="greater_than", value=4)).verdict == "pass"
    assert validate("json_path_match", doc, path_spec(path="$.n", comparator="less_than", value=4)).verdict == "fail"


def test_json_path_match_numeric_comparator_on_text_is_an_error():
    result = validate("json_path_match", '{"n": "x"}', path_spec(path="$.n", comparator="greater_than", value=4))
    assert result.verdict == "error"


def test_json_path_match_missing_path_fails():
    assert validate("json_path_match", '{"a": 1}', path_spec(path="$.b", value=1)).verdict == "fail"


def test_json_path_match_broken_config_is_a_pack_error():
    assert validate("json_path_match", "{}", "literal:{oops").outcome_class == "pack_error"
    assert validate("json_path_match", "{}", path_spec(path="a.b", value=1)).outcome_class == "pack_error"
    assert validate("json_path_match", '{"a": 1}', path_spec(path="$.a", comparator="near", value=1)).outcome_class == "pack_error"
