from __future__ import annotations

from typing import Any

import pytest

from bundle import process_bundle, validate_composed_tool


def tool(name: str, primitive: str, args: Any = None, **extra: Any) -> dict[str, Any]:
    implementation: dict[str, Any] = {"primitive": primitive}
    implementation["args"] = {"path": "x"} if args is None else args
    return {
        "name": name,
        "parameters": extra.pop("parameters", {"type": "object", "properties": {"sku": {"type": "string"}}}),
        "implementation": implementation,
        **extra,
    }


def errors_for(bundle: dict[str, Any], custom: Any) -> list[tuple[str, str]]:
    bundle["tools"] = {"custom": custom}
    return [(e.field, e.message) for e in process_bundle(bundle).errors]


def test_it_accepts_a_delegating_tool_with_known_placeholders(bundle: dict[str, Any]) -> None:
    args = {"path": "/items/${sku}", "all": "${parameters}", "auth": "Bearer ${secrets.API_KEY}", "q": "${query:sku.id}"}
    assert errors_for(bundle, [tool("lookup", "http_request", args)]) == []


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({"a": "${ sku }"}, "tools.custom[0].implementation.args.a", 'contains unknown placeholder "${ sku }"'),
        ({"a": "${secrets.}"}, "tools.custom[0].implementation.args.a", 'contains unknown placeholder "${secrets.}"'),
        (
            {"h": {"Authorization": "${nope}"}},
            "tools.custom[0].implementation.args.h.Authorization",
            'contains unknown placeholder "${nope}"',
        ),
        ({"l": ["ok", "${sku"]}, "tools.custom[0].implementation.args.l[1]", 'contains an unclosed placeholder: "${sku"'),
        ({"a": "${}"}, "tools.custom[0].implementation.args.a", 'contains an empty placeholder: "${}"'),
    ],
)
def test_it_rejects_bad_placeholders(bundle: dict[str, Any], args: dict[str, Any], field: str, message: str) -> None:
    assert (field, message) in errors_for(bundle, [tool("t", "read_file", args)])


def test_it_reports_self_delegation_as_primitive_and_cycle_errors(bundle: dict[str, Any]) -> None:
    errors = errors_for(bundle, [tool("loop", "loop")])
    assert ("tools.custom[0].implementation.primitive", "cannot reference the tool's own name") in errors
    assert ("tools", 'tool "loop" has a delegation cycle through "loop"') in errors


def test_it_reports_cycles_between_tools(bundle: dict[str, Any]) -> None:
    errors = errors_for(bundle, [tool("a", "b"), tool("b", "a")])
    assert ("tools", 'tool "a" has a delegation cycle through "a"') in errors


def test_it_allows_eight_chained_tools_but_not_nine(bundle: dict[str, Any]) -> None:
    chain = [tool(f"t{i}", f"t{i + 1}") for i in range(1, 9)] + [tool("t9", "read_file")]
    errors = errors_for(bundle, chain)
    assert errors == [("tools", 'tool "t1" exceeds maximum delegation depth of 8')]
    assert errors_for(bundle, chain[1:]) == []


def test_it_skips_mock_tools_entirely(bundle: dict[str, Any]) -> None:
    assert errors_for(bundle, [{"name": "m", "implementation": {"type": " MOCK "}}]) == []


@pytest.mark.parametrize(
    ("item", "field", "message"),
    [
        ({"name": "t"}, "tools.custom[0].implementation", "must be valid JSON: unexpected end of JSON input"),
        ({"name": "t", "implementation": {"args": {}}}, "tools.custom[0].implementation.primitive", "is required"),
        ({"name": "t", "implementation": {"primitive": "read_file"}}, "tools.custom[0].implementation.args", "is required"),
        (
            {
                "name": "t",
                "parameters": {"type": "object", "properties": "invalid"},
                "implementation": {"primitive": "read_file", "args": {}},
            },
            "tools.custom[0].parameters",
            "must be valid JSON: properties must be a mapping of parameter names to their schemas, not text `invalid`",
        ),
    ],
)
def test_it_reports_missing_or_malformed_tool_parts(bundle: dict[str, Any], item: dict[str, Any], field: str, message: str) -> None:
    errors = errors_for(bundle, [item])
    assert (field, message) in errors, errors


def test_it_requires_args_to_be_an_object(bundle: dict[str, Any]) -> None:
    errors = errors_for(bundle, [tool("t", "read_file", ["x"])])
    assert errors[0][0] == "tools.custom[0].implementation.args"
    assert errors[0][1].startswith("must be a JSON object: ")


def test_it_rejects_invalid_parameter_schemas(bundle: dict[str, Any]) -> None:
    bad = [
        tool("a", "read_file", parameters={"type": "object", "required": "sku"}),
        tool("b", "read_file", parameters={"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=a)"}}}),
        tool("c", "read_file", parameters={"$ref": "#/$defs/missing"}),
    ]
    errors = errors_for(bundle, bad)
    assert errors[0][0] == "tools.custom[0].parameters" and errors[0][1].startswith("must be a valid JSON Schema: ")
    assert errors[1][0] == "tools.custom[1].parameters" and "invalid perl operator" in errors[1][1]
    assert errors[2][0] == "tools.custom[2].parameters" and errors[2][1].startswith("must resolve as a valid JSON Schema: ")


def test_it_does_not_check_type_names_against_the_vocabulary(bundle: dict[str, Any]) -> None:
    assert errors_for(bundle, [tool("a", "read_file", parameters={"type": "integerr"})]) == []


def test_it_reports_an_unreadable_custom_list_on_tools(bundle: dict[str, Any]) -> None:
    errors = errors_for(bundle, {"a": 1})
    assert errors[0] == ("tools", "must be a valid tools object: custom must be a list of tools, not a mapping")


@pytest.mark.parametrize(
    ("custom", "message"),
    [
        (["lookup"], "each tool in custom must be a mapping (name:, parameters:, implementation:), not text `lookup`"),
        ([{"name": 7}], "a tool's name must be text, not a whole number `7`"),
        ("lookup", "custom must be a list of tools, not text `lookup`"),
    ],
)
def test_a_malformed_tools_object_is_said_in_plain_words(bundle: dict[str, Any], custom: Any, message: str) -> None:
    """Issue 25: the spec's ``must be a valid tools object: <decoder message>`` without Go's decoder text."""
    errors = errors_for(bundle, custom)
    assert errors[0] == ("tools", f"must be a valid tools object: {message}")
    assert not any(word in m for _, m in errors for word in ("unmarshal", "Go value", "Go struct", "interface {}"))


def test_validate_composed_tool_uses_the_same_rules_with_a_prefix() -> None:
    errors = validate_composed_tool(tool("t", "t", {"a": "${x}"}), field_prefix="definition")
    pairs = [(e.field, e.message) for e in errors]
    assert ("definition.implementation.primitive", "cannot reference the tool's own name") in pairs
    assert ("definition.implementation.args.a", 'contains unknown placeholder "${x}"') in pairs
    assert validate_composed_tool(tool("ok", "read_file", {"path": "${sku}"})) == []
    assert validate_composed_tool("nope")[0].field == "definition"  # type: ignore[arg-type]
