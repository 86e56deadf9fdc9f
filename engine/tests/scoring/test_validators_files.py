from __future__ import annotations

import json

import pytest

from engine.tests.scoring.helpers import validate


def captured(content: str | None, exists: bool = True) -> dict:
    return {"out": {"path": "/workspace/out.json", "exists": exists, "content": content, "size": len(content or ""), "truncated": False}}


LISTING = {"tree": [{"path": "/workspace/src/app.py", "size": 3}, {"path": "/workspace/README.md", "size": 1}]}


def test_file_exists_passes_when_captured_and_required():
    assert validate("file_exists", target="file:out", expected=None, captured_files=captured("{}")).verdict == "pass"


def test_file_exists_with_must_exist_false_passes_only_when_missing():
    missing = captured(None, exists=False)
    assert validate("file_exists", target="file:out", expected=None, config={"must_exist": False}, captured_files=missing).verdict == "pass"
    assert validate("file_exists", target="file:out", expected=None, captured_files=missing).verdict == "fail"


def test_file_exists_without_any_capture_is_unavailable():
    assert validate("file_exists", target="file:out", expected=None).state == "unavailable"


def test_file_validators_require_the_file_prefix():
    assert validate("file_exists", target="final_output", expected=None).outcome_class == "pack_error"


def test_file_content_match_modes():
    files = captured('{"a": 1}\n')
    assert validate("file_content_match", target="file:out", expected='literal:"a"', captured_files=files).verdict == "pass"
    assert (
        validate(
            "file_content_match",
            target="file:out",
            expected='literal:{"a":1}',
            config={"match_mode": "exact", "ignore_whitespace": True},
            captured_files=files,
        ).verdict
        == "pass"
    )
    assert (
        validate(
            "file_content_match", target="file:out", expected="literal:^\\{", config={"match_mode": "regex"}, captured_files=files
        ).verdict
        == "pass"
    )
    assert (
        validate(
            "file_content_match",
            target="file:out",
            expected="literal:password",
            config={"match_mode": "not_contains"},
            captured_files=files,
        ).verdict
        == "pass"
    )
    assert (
        validate(
            "file_content_match",
            target="file:out",
            expected='literal:{"a": 1.0}',
            config={"match_mode": "json_equal"},
            captured_files=files,
        ).verdict
        == "pass"
    )
    assert validate("file_content_match", target="file:out", expected="literal:zzz", captured_files=files).verdict == "fail"


def test_file_content_match_accepts_mode_as_an_alias():
    files = captured("def merge_intervals(x): ...")
    assert (
        validate(
            "file_content_match", target="file:out", expected="literal:def merge_intervals", config={"mode": "exact"}, captured_files=files
        ).verdict
        == "fail"
    )


def test_file_content_match_on_a_missing_file_fails_or_is_unavailable_and_bad_mode_is_pack_error():
    # The agent finished without writing the file: its failure (score 0), not missing evidence.
    never_written = validate("file_content_match", target="file:out", expected="literal:x", captured_files=captured(None, exists=False))
    assert (never_written.state, never_written.verdict, never_written.normalized_score) == ("available", "fail", 0.0)
    assert never_written.reason.startswith("target: the agent did not deliver: captured file 'out'")
    # The harness stopped the run (sandbox error): the same gap is missing evidence.
    stopped = validate(
        "file_content_match",
        target="file:out",
        expected="literal:x",
        captured_files=captured(None, exists=False),
        status="failed",
        stop_reason="sandbox_error",
    )
    assert stopped.state == "unavailable"
    # The agent ran out of steps and verification never ran: still the agent's
    ran_out = validate("file_content_match", target="file:out", expected="literal:x", status="failed", stop_reason="step_limit")
    assert (ran_out.state, ran_out.verdict) == ("available", "fail")
    assert validate("file_exists", target="file:out", expected=None, status="failed", stop_reason="timeout").verdict == "fail"
    assert validate("file_exists", target="file:out", expected=None, status="failed", stop_reason="provider_error").state == "unavailable"
    assert (
        validate(
            "file_content_match", target="file:out", expected="literal:x", config={"match_mode": "psychic"}, captured_files=captured("x")
        ).outcome_class
        == "pack_error"
    )


def test_file_json_schema_validates_file_content():
    schema = {"type": "object", "required": ["a"]}
    assert (
        validate(
            "file_json_schema", target="file:out", expected=None, config={"schema": schema}, captured_files=captured('{"a": 1}')
        ).verdict
        == "pass"
    )
    assert (
        validate("file_json_schema", target="file:out", expected=None, config={"schema": schema}, captured_files=captured("{}")).verdict
        == "fail"
    )
    assert (
        validate("file_json_schema", target="file:out", expected=None, config={}, captured_files=captured("{}")).outcome_class
        == "pack_error"
    )


def test_directory_structure_checks_required_forbidden_and_directories():
    config = {"required_files": ["src/app.py", "/workspace/README.md"], "forbidden_files": [".env"], "required_directories": ["src"]}
    assert validate("directory_structure", target="file:tree", expected=None, config=config, directory_listings=LISTING).verdict == "pass"
    result = validate(
        "directory_structure",
        target="file:tree",
        expected=None,
        config={"required_files": ["setup.py"], "forbidden_files": ["README.md"]},
        directory_listings=LISTING,
    )
    assert result.verdict == "fail"
    assert "missing file setup.py" in result.reason and "forbidden file README.md" in result.reason


def test_directory_structure_without_listing_is_unavailable_and_unknown_keys_are_pack_errors():
    assert validate("directory_structure", target="file:tree", expected=None, config={}).state == "unavailable"
    assert (
        validate("directory_structure", target="file:tree", expected=None, config={"must": []}, directory_listings=LISTING).outcome_class
        == "pack_error"
    )


def post(condition: str, files: dict, **config):
    return validate("postcondition", target="file:out", expected=None, config={"condition": condition, **config}, captured_files=files)


def test_postcondition_exists_and_not_exists_work_without_evidence():
    assert post("exists", captured("x")).verdict == "pass"
    assert post("not_exists", {}).verdict == "pass"
    assert post("exists", {}).verdict == "fail"


def test_postcondition_content_conditions():
    files = captured(json.dumps({"status": "done", "n": 2}))
    assert post("contains", files, value="done").verdict == "pass"
    assert post("not_contains", files, value="error").verdict == "pass"
    assert post("regex_match", files, value='"n":\\s*2').verdict == "pass"
    assert post("json_path_match", files, json_path="$.n", value=2).verdict == "pass"
    assert post("equals", files, value={"n": 2, "status": "done"}).verdict == "pass"
    assert post("equals", captured("exact"), value="exact").verdict == "pass"


def test_postcondition_missing_target_fails_except_for_existence():
    missing = post("contains", captured(None, exists=False), value="x")
    assert (missing.state, missing.verdict, missing.normalized_score) == ("available", "fail", 0.0)


def test_postcondition_broken_configs_are_pack_errors():
    assert validate("postcondition", target="file:out", expected=None, captured_files=captured("x")).outcome_class == "pack_error"
    assert post("teleports", captured("x")).outcome_class == "pack_error"
    assert post("contains", captured("x"), value=3).outcome_class == "pack_error"
    assert post("regex_match", captured("x"), value="(").outcome_class == "pack_error"
    assert post("json_path_match", captured("{}"), value=1).outcome_class == "pack_error"


POST_FILES = captured(json.dumps({"status": "done", "n": 2}))


@pytest.mark.parametrize(
    ("condition", "files", "config", "verdict", "reason"),
    [
        ("exists", captured("x"), {}, "pass", "file:out exists"),
        ("exists", captured(None, exists=False), {}, "fail", "file:out does not exist"),
        ("not_exists", captured("x"), {}, "fail", "file:out exists"),
        ("not_exists", {}, {}, "pass", "file:out does not exist"),
        ("contains", POST_FILES, {"value": "done"}, "pass", "contains 'done': ok"),
        ("contains", POST_FILES, {"value": "nope"}, "fail", "contains 'nope': failed"),
        ("not_contains", POST_FILES, {"value": "done"}, "fail", "not_contains 'done': failed"),
        ("regex_match", POST_FILES, {"value": "st.tus"}, "pass", "pattern matched"),
        ("regex_match", POST_FILES, {"value": "^x"}, "fail", "pattern did not match"),
        ("json_path_match", POST_FILES, {"json_path": "$.n", "value": 2}, "pass", "$.n equals value"),
        ("json_path_match", POST_FILES, {"json_path": "$.n", "value": 3}, "fail", "$.n does not equal value"),
        ("json_path_match", POST_FILES, {"json_path": "$.missing", "value": None}, "fail", "$.missing does not equal value"),
        ("json_path_match", captured("not json"), {"json_path": "$.n", "value": 2}, "fail", "file is not valid JSON"),
        ("equals", captured("exact"), {"value": "exact"}, "pass", "exact match"),
        ("equals", captured("exact"), {"value": "other"}, "fail", "content differs"),
        ("equals", POST_FILES, {"value": {"n": 2, "status": "done"}}, "pass", "JSON equal"),
        ("equals", POST_FILES, {"value": {"n": 3}}, "fail", "JSON differs"),
        ("equals", captured("not json"), {"value": {"n": 3}}, "fail", "file is not valid JSON"),
    ],
)
def test_postcondition_rules(condition, files, config, verdict, reason):
    result = post(condition, files, **config)
    assert (result.verdict, result.outcome_class == "pack_error") == (verdict, False)
    assert result.reason.startswith(reason)


@pytest.mark.parametrize(
    ("condition", "config"),
    [
        ("teleports", {}),
        ("contains", {"value": 3}),
        ("not_contains", {}),
        ("regex_match", {"value": 1}),
        ("regex_match", {"value": "("}),
        ("json_path_match", {"value": 1}),
        ("exists", {"wildcard": 1}),
    ],
)
def test_postcondition_config_errors(condition, config):
    assert post(condition, captured("x"), **config).outcome_class == "pack_error"
