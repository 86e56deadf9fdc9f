from __future__ import annotations

import json

import pytest

from engine.tests.tools.support import manifest
from engine.tools import ToolsetError, build_toolset, catalogue
from engine.tools.registry import PrimitiveSpec, RegistryError, register, schema_problems
from engine.types import ToolCall

ALL = {
    "submit",
    "read_file",
    "write_file",
    "list_files",
    "search_files",
    "search_text",
    "query_json",
    "query_sql",
    "http_request",
    "run_tests",
    "build",
}


def names(m, **kw):
    return build_toolset(m, sandbox=None, secrets={}, **kw).names


def test_catalogue_lists_every_primitive_with_its_shape():
    entries = {e["name"]: e for e in catalogue()}
    assert set(entries) == ALL | {"exec"}
    assert entries["exec"]["kind"] == "shell" and entries["submit"]["kind"] == "always"
    assert [k for k, e in entries.items() if e["accepts_secrets"]] == ["http_request"]
    for entry in entries.values():
        assert set(entry) == {"name", "kind", "description", "parameters", "accepts_secrets", "examples"}
        assert entry["examples"], entry["name"]


def test_every_primitive_schema_is_portable():
    for entry in catalogue():
        assert schema_problems(entry["parameters"]) == [], entry["name"]
        assert "format" not in json.dumps(entry["parameters"])


def test_schema_checker_flags_open_objects_and_uri_format():
    assert schema_problems({"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}})
    assert schema_problems({"type": "object", "properties": {}, "additionalProperties": True})


def test_register_rejects_invalid_examples_and_duplicates():
    params = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
    with pytest.raises(RegistryError, match="example 0 is invalid"):
        register(PrimitiveSpec("zz_bad", "file", "x.", params, create=lambda ctx: None, examples=({"b": 1},)))
    with pytest.raises(RegistryError, match="registered twice"):
        register(PrimitiveSpec("read_file", "file", "x.", params, create=lambda ctx: None))
    with pytest.raises(RegistryError, match="only http_request"):
        register(PrimitiveSpec("zz_sec", "file", "x.", params, create=lambda ctx: None, accepts_secrets=True))


def test_empty_kind_list_allows_every_kind_but_not_exec():
    assert names(manifest([])) == ALL


def test_allow_shell_adds_exec():
    assert names(manifest([], shell=True)) == ALL | {"exec"}


def test_allowed_kinds_filter_primitives():
    assert names(manifest(["file"])) == {"submit", "read_file", "write_file", "list_files", "search_files", "search_text"}
    assert names(manifest(["data"])) == {"submit", "query_json", "query_sql"}
    assert names(manifest([" Network "])) == {"submit", "http_request"}
    assert names(manifest(["build"])) == {"submit", "run_tests", "build"}
    assert names(manifest(["browser"])) == {"submit"}


def test_manifest_allowed_and_denied_lists_keep_submit():
    assert names(manifest([], tools={"allowed": ["read_file"]})) == {"submit", "read_file"}
    assert names(manifest([], tools={"denied": ["submit", "read_file"]})) == ALL - {"read_file"}


def test_deployment_tool_overrides_hide_names_but_never_submit():
    got = names(manifest([]), deployment_config={"tool_overrides": {"denied": ["build", "submit"]}})
    assert got == ALL - {"build"}


def test_runtime_profile_override_enables_shell():
    got = names(manifest([]), deployment_config={"runtime_profile": {"profile_config": {"sandbox": {"allow_shell": True}}}})
    assert "exec" in got


def test_definitions_are_sorted_with_schema():
    ts = build_toolset(manifest(["file"]), sandbox=None, secrets={})
    defs = ts.definitions()
    assert [d.name for d in defs] == sorted(d.name for d in defs)
    parameters = defs[0].as_dict()["parameters"]
    assert isinstance(parameters, dict) and parameters["type"] == "object"


def test_invisible_tool_is_refused_with_spec_message():
    ts = build_toolset(manifest(["file"]), sandbox=None, secrets={})
    result = ts.execute(ToolCall("1", "exec", '{"command": ["id"]}'))
    assert result.is_error and json.loads(result.content) == {"error": 'tool "exec" is not available in this runtime'}
    assert result.tool_call_id == "1"


@pytest.mark.parametrize("raw", ["{", "[1]", '"x"', "null", '{"answer": 5}'])
def test_undecodable_or_mistyped_arguments_are_a_tool_error(raw):
    ts = build_toolset(manifest([]), sandbox=None, secrets={})
    result = ts.execute(ToolCall("1", "submit", raw))
    assert json.loads(result.content) == {"error": 'tool "submit" arguments must be valid JSON'}


def test_empty_arguments_count_as_empty_object():
    ts = build_toolset(manifest([]), sandbox=None, secrets={})
    assert json.loads(ts.execute(ToolCall("1", "submit", "")).content) == {"error": "answer is required"}


def test_env_var_placeholders_are_refused_with_spec_messages():
    with pytest.raises(ToolsetError, match="cannot carry secrets"):
        build_toolset(manifest([], env={"A": "${secrets.X}"}), sandbox=None, secrets={})
    with pytest.raises(ToolsetError, match="must be literal strings"):
        build_toolset(manifest([], env={"A": "${HOME}"}), sandbox=None, secrets={})
