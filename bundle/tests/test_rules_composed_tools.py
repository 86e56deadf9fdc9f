"""One composed tool's rules (spec §3.6), through ``validate_composed_tool``: every error pinned."""

from __future__ import annotations

from typing import Any

import pytest

from bundle import validate_composed_tool

from .rules import Errors

D = "definition"
PARAMETERS = {"type": "object", "properties": {"sku": {"type": "string"}}}


def tool(*, implementation: Any = ..., drop: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    """A valid delegating tool with ``fields`` changed and the ``drop`` keys removed."""
    definition: dict[str, Any] = {
        "name": "lookup",
        "parameters": PARAMETERS,
        "implementation": {"primitive": "http_request", "args": {"url": "https://x.test/${sku}"}},
        **fields,
    }
    if implementation is not ...:
        definition["implementation"] = implementation
    for key in drop:
        definition.pop(key)
    return definition


def implementation(**fields: Any) -> dict[str, Any]:
    return {"primitive": "http_request", "args": {"url": "https://x.test/${sku}"}, **fields}


RULES = [
    pytest.param(
        tool(drop=("implementation",)),
        [(f"{D}.implementation", "must be valid JSON: unexpected end of JSON input")],
        id="implementation required",
    ),
    pytest.param(
        tool(implementation="http_request", parameters=True),
        [(f"{D}.implementation", "must be valid JSON: the implementation must be a mapping (primitive:, args:), not text `http_request`")],
        id="implementation is an object and stops the checks",
    ),
    pytest.param(
        tool(implementation=implementation(primitive=3), parameters=True),
        [
            (
                f"{D}.implementation",
                "must be valid JSON: primitive (the tool it calls) must be text, not a whole number `3`",
            )
        ],
        id="primitive is a string and stops the checks",
    ),
    pytest.param(
        tool(implementation=None),
        [(f"{D}.implementation.primitive", "is required"), (f"{D}.implementation.args", "is required")],
        id="null implementation",
    ),
    pytest.param(
        tool(implementation=implementation(primitive=" ")),
        [(f"{D}.implementation.primitive", "is required")],
        id="primitive required",
    ),
    pytest.param(
        tool(implementation=implementation(primitive=" lookup ")),
        [
            (f"{D}.implementation.primitive", "cannot reference the tool's own name"),
            (D, 'tool "lookup" has a delegation cycle through "lookup"'),
        ],
        id="primitive is not the tool itself",
    ),
    pytest.param(
        tool(parameters=False),
        [
            (
                f"{D}.parameters",
                "must be valid JSON: the parameters must be a JSON Schema mapping (type: object, properties: …), not true/false `false`",
            ),
            (f"{D}.implementation.args.url", 'contains unknown placeholder "${sku}"'),
        ],
        id="boolean parameters",
    ),
    pytest.param(
        tool(parameters=["sku"]),
        [
            (f"{D}.parameters", "must be a valid JSON Schema: a schema is a mapping (type: object, properties: …), not a list"),
            (f"{D}.implementation.args.url", 'contains unknown placeholder "${sku}"'),
        ],
        id="parameters are a schema object",
    ),
    pytest.param(
        tool(parameters={"type": "object", "properties": {"sku": {"type": "string"}}, "required": "sku"}),
        [(f"{D}.parameters", "must be a valid JSON Schema: jsonschema: /required: 'sku' is not of type 'array'")],
        id="parameters schema valid",
    ),
    pytest.param(
        tool(parameters=None),
        [(f"{D}.implementation.args.url", 'contains unknown placeholder "${sku}"')],
        id="null parameters declare nothing",
    ),
    pytest.param(
        tool(implementation={"primitive": "http_request"}),
        [(f"{D}.implementation.args", "is required")],
        id="args required",
    ),
    pytest.param(
        tool(implementation=implementation(args="x")),
        [
            (
                f"{D}.implementation.args",
                "must be a JSON object: args must be a mapping of argument names to values, not text `x`",
            )
        ],
        id="args are an object",
    ),
    pytest.param(
        tool(implementation=implementation(args={"a": "${", "b": "${}", "c": "${nope}", "d": "${other}"})),
        [
            (f"{D}.implementation.args.a", 'contains an unclosed placeholder: "${"'),
            (f"{D}.implementation.args.c", 'contains unknown placeholder "${nope}"'),
        ],
        id="first syntax problem and first unknown placeholder",
    ),
]


@pytest.mark.parametrize(("definition", "expected"), RULES)
def test_it_reports_each_composed_tool_rule_with_its_field_and_message(definition: dict[str, Any], expected: Errors) -> None:
    assert [(e.field, e.message) for e in validate_composed_tool(definition)] == expected


@pytest.mark.parametrize(
    "definition",
    [
        pytest.param(tool(), id="delegating tool"),
        pytest.param(tool(implementation={"type": "mock", "primitive": 3}), id="mock"),
        pytest.param(tool(implementation=implementation(args=None)), id="null args"),
        pytest.param(tool(drop=("parameters",), implementation=implementation(args={"all": "${parameters}"})), id="default parameters"),
    ],
)
def test_it_accepts_well_formed_composed_tools(definition: dict[str, Any]) -> None:
    assert validate_composed_tool(definition) == []
