from __future__ import annotations

import time
from pathlib import Path

import pytest

from bundle import process_bundle

EXAMPLES = Path(__file__).resolve().parents[2] / "packs" / "tests" / "data" / "examples"


def test_it_rejects_duplicate_yaml_keys_with_both_lines() -> None:
    result = process_bundle("pack:\n  slug: a\n  slug: b\n")
    assert not result.valid
    [error] = result.errors
    assert error.message == 'yaml: line 3: mapping key "slug" already defined at line 2'
    assert error.line == 3


def test_it_rejects_cli_smoke_ruff_for_its_duplicate_version_key() -> None:
    result = process_bundle((EXAMPLES / "cli-smoke-ruff.yaml").read_bytes())
    assert not result.valid
    assert 'mapping key "version" already defined at line' in result.error_text


def test_it_rejects_duplicate_keys_inside_ignored_subtrees() -> None:
    result = process_bundle("pack:\n  owner:\n    a: 1\n    a: 2\n")
    assert 'mapping key "a" already defined at line 3' in result.error_text


def test_it_keeps_yes_no_on_off_and_dates_as_strings() -> None:
    text = (
        "pack: {slug: s, name: n, family: f}\n"
        "version:\n  number: 1\n  tool_policy: {flag: yes, other: off, when: 2024-01-02,"
        " n: 3, f: 1.5, b: true, z: ~}\n"
    )
    result = process_bundle(text)
    assert result.bundle is not None
    policy = result.bundle["version"]["tool_policy"]
    assert policy == {"flag": "yes", "other": "off", "when": "2024-01-02", "n": 3, "f": 1.5, "b": True, "z": None}


def test_it_keeps_the_literal_text_of_numbers_in_string_fields() -> None:
    result = process_bundle("pack: {slug: 1.10, name: true, family: f}\nversion: {number: 1}\n")
    assert result.bundle is not None
    assert result.bundle["pack"]["slug"] == "1.10"
    assert result.bundle["pack"]["name"] == "true"


def test_it_rejects_a_string_where_an_integer_field_is_expected() -> None:
    result = process_bundle('pack: {slug: s}\nversion:\n  number: "1"\n')
    [error] = [e for e in result.errors if e.field == "version.number"]
    assert error.line == 3
    assert error.message == "must be a whole number, not text `1`"  # plain words, no Go decoder text


def test_one_wrong_type_does_not_hide_the_other_problems() -> None:
    """Issue 25: a type error hid every other problem ("1 problem"; fixing it revealed 8)."""
    text = "pack:\n  slug: s\nversion:\n  number: one\n  execution_mode: nonsense\n  evaluation_spec:\n    name: 12\n"
    errors = process_bundle(text).errors
    fields = [e.field for e in errors]
    assert "version.number" in fields and "version.evaluation_spec.name" in fields
    assert len(errors) > 2 and fields.count("version.number") == 1  # the rules ran too, without repeating it
    assert [e.line for e in errors if e.line is not None] == sorted(e.line for e in errors if e.line is not None)
    assert not any("unmarshal" in e.message or "Go struct" in e.message for e in errors)


def test_it_rejects_unknown_evaluation_spec_fields_as_decode_errors() -> None:
    text = "version:\n  evaluation_spec:\n    scorecard:\n      dimensions:\n        - key: correctness\n          wieght: 2\n"
    [error] = [e for e in process_bundle(text).errors if e.field.endswith("wieght")]
    assert error.message == 'is not a field of the evaluation spec: remove "wieght" or check its spelling'
    assert error.field == "version.evaluation_spec.scorecard.dimensions[0].wieght"
    assert error.line == 6


def test_it_rejects_numbers_where_the_evaluation_spec_wants_strings() -> None:
    [error] = [
        e for e in process_bundle("version:\n  evaluation_spec:\n    name: 12\n").errors if e.field == "version.evaluation_spec.name"
    ]
    assert error.message == "must be text, not a whole number `12`"


def test_it_reports_an_invalid_uuid_artifact_id_as_a_decode_error() -> None:
    text = "version:\n  assets:\n    - key: a\n      path: p\n      artifact_id: nope\n"
    [error] = [e for e in process_bundle(text).errors if e.field == "version.assets[0].artifact_id"]
    assert 'not "nope"' in error.message and "UUID" in error.message


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("", "is required"),
        ("   \n\t\n", "is required"),
        (b"pack: \xff\xfe", "must be valid UTF-8"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("just a string", "the top level must be a mapping"),
        ("a: [1, 2\n", "not valid YAML: line 2, column 1: did not find expected ',' or ']'"),
        ("a: 1\n---\nb: 2\n", "not valid YAML: line 2"),
        ("a: .inf\n", "non-finite"),
    ],
)
def test_it_turns_hostile_or_broken_documents_into_clean_errors(source: str, fragment: str) -> None:
    result = process_bundle(source)
    assert not result.valid
    assert fragment in result.error_text


def test_it_reports_a_blank_document_on_field_bundle() -> None:
    [error] = process_bundle("  ").errors
    assert (error.field, error.message) == ("bundle", "is required")


def test_it_treats_a_comment_only_document_as_an_empty_bundle() -> None:
    result = process_bundle("# nothing here\n")
    fields = [e.field for e in result.errors]
    assert fields[:3] == ["pack.slug", "pack.name", "pack.family"]


def test_it_rejects_documents_over_one_mebibyte_without_parsing() -> None:
    source = b"a: " + b"x" * (1024 * 1024)
    start = time.perf_counter()
    result = process_bundle(source)
    assert time.perf_counter() - start < 1
    assert "exceeds the maximum size" in result.error_text


def test_it_rejects_billion_laughs_quickly_without_expanding() -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        refs = ",".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    source = "pack:\n  x:\n" + "\n".join("    " + line for line in lines) + "\n"
    start = time.perf_counter()
    result = process_bundle(source)
    assert time.perf_counter() - start < 1
    assert "alias expansion exceeds the limit" in result.error_text


def test_it_rejects_recursive_aliases_cleanly() -> None:
    result = process_bundle("version:\n  tool_policy: &a\n    x: *a\n")
    assert not result.valid


def test_it_rejects_deep_nesting_cleanly() -> None:
    source = "version:\n  tool_policy:\n    x: " + "[" * 200 + "]" * 200 + "\n"
    result = process_bundle(source)
    assert "nesting exceeds depth" in result.error_text


def test_it_rejects_libyaml_level_nesting_cleanly() -> None:
    result = process_bundle("a: " + "[" * 5000 + "]" * 5000)
    assert "not valid YAML" in result.error_text and "^" not in result.error_text


@pytest.mark.parametrize("slug", ["my pack", "me@corp", "-lead", "ünï"])
def test_a_pack_slug_with_spaces_or_at_signs_is_refused(slug: str) -> None:
    errors = process_bundle(f"pack: {{slug: '{slug}', name: n, family: f}}\nversion: {{number: 1}}\n").errors
    assert any(e.field == "pack.slug" and "letters, digits, hyphens" in e.message for e in errors)


def test_a_dotted_slug_is_fine() -> None:
    errors = process_bundle("pack: {slug: 1.10, name: n, family: f}\nversion: {number: 1}\n").errors
    assert not any(e.field == "pack.slug" for e in errors)
