"""Composed tools ``tools.custom[i]`` (spec §2.7, §3.6)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
from jsonschema.validators import Draft202012Validator

from bundle.decode import json_mismatch, json_value_words
from bundle.validate.common import Report, re2_error

MAX_DELEGATION_DEPTH = 8
DEFAULT_PARAMETERS: dict[str, Any] = {"type": "object", "additionalProperties": False}
_ENCODINGS = ("json:", "query:", "path:")
_META_VALIDATOR = Draft202012Validator(Draft202012Validator.META_SCHEMA)


def is_mock(implementation: Any) -> bool:
    return (
        isinstance(implementation, dict)
        and isinstance(implementation.get("type"), str)
        and implementation["type"].strip().lower() == "mock"
    )


def validate_tools(bundle: dict[str, Any], report: Report) -> None:
    tools = bundle.get("tools")
    if not tools:
        return
    custom = tools.get("custom")
    if custom is None:
        return
    problem = _shape_problem(custom)
    if problem:
        report.add("tools", f"must be a valid tools object: {problem}")
        return
    graph: dict[str, str] = {}
    order: list[str] = []
    for i, tool in enumerate(custom):
        if tool is None:
            tool = {}
        check_tool(tool, f"tools.custom[{i}]", report)
        implementation = tool.get("implementation")
        if is_mock(implementation) or not isinstance(implementation, dict):
            continue
        name = (tool.get("name") or "").strip()
        primitive = implementation.get("primitive")
        primitive = primitive.strip() if isinstance(primitive, str) else ""
        if name and primitive:
            if name not in graph:
                order.append(name)
            graph[name] = primitive
    for name in order:
        _check_chain(name, graph, report)


def _shape_problem(custom: Any) -> str | None:
    if not isinstance(custom, list):
        return f"custom must be a list of tools, not {json_value_words(custom)}"
    for tool in custom:
        if tool is None:
            continue
        if not isinstance(tool, dict):
            return f"each tool in custom must be a mapping (name:, parameters:, implementation:), not {json_value_words(tool)}"
        name = tool.get("name")
        if name is not None and not isinstance(name, str):
            return f"a tool's name {json_mismatch('string', name)}"
    return None


def _check_chain(name: str, graph: dict[str, str], report: Report) -> None:
    visited = {name}
    current = graph[name]
    hops = 1
    while current in graph:
        if current in visited:
            report.add("tools", f'tool "{name}" has a delegation cycle through "{current}"')
            return
        hops += 1
        if hops > MAX_DELEGATION_DEPTH:
            report.add(
                "tools",
                f'tool "{name}" exceeds maximum delegation depth of {MAX_DELEGATION_DEPTH}',
            )
            return
        visited.add(current)
        current = graph[current]


def check_tool(tool: dict[str, Any], base: str, report: Report) -> None:
    """All per-tool rules (not the cross-tool delegation graph)."""
    implementation = _implementation(tool, base, report)
    if implementation is None or is_mock(implementation):
        return
    primitive = implementation.get("primitive")
    if primitive is not None and not isinstance(primitive, str):
        report.add(
            f"{base}.implementation",
            f"must be valid JSON: primitive (the tool it calls) {json_mismatch('string', primitive)}",
        )
        return
    primitive = (primitive or "").strip()
    name = tool.get("name")
    name = name.strip() if isinstance(name, str) else ""
    if not primitive:
        report.add(f"{base}.implementation.primitive", "is required")
    elif primitive == name:
        report.add(f"{base}.implementation.primitive", "cannot reference the tool's own name")
    parameters = tool.get("parameters", DEFAULT_PARAMETERS)
    if parameters is None:
        parameters = DEFAULT_PARAMETERS
    properties = _check_parameters(parameters, f"{base}.parameters", report)
    _check_args(implementation, properties, f"{base}.implementation.args", report)


def _implementation(tool: dict[str, Any], base: str, report: Report) -> dict[str, Any] | None:
    """The tool's implementation object (null reads as empty), or None once its absence is reported."""
    if "implementation" not in tool:
        report.add(f"{base}.implementation", "must be valid JSON: unexpected end of JSON input")
        return None
    implementation = tool["implementation"]
    if implementation is None:
        return {}
    if not isinstance(implementation, dict):
        report.add(
            f"{base}.implementation",
            f"must be valid JSON: the implementation must be a mapping (primitive:, args:), not {json_value_words(implementation)}",
        )
        return None
    return implementation


def _check_args(implementation: dict[str, Any], properties: set[str], args_path: str, report: Report) -> None:
    if "args" not in implementation:
        report.add(args_path, "is required")
        return
    args = implementation["args"]
    if args is None:
        return
    if not isinstance(args, dict):
        report.add(
            args_path,
            f"must be a JSON object: args must be a mapping of argument names to values, not {json_value_words(args)}",
        )
        return
    # Only the first problem of each kind is reported, like the reference.
    strings = list(string_leaves(args, args_path))
    syntax = next(((path, problem) for path, text in strings if (problem := _syntax_problem(text))), None)
    if syntax is not None:
        report.add(*syntax)
    unknown = next(((path, ref) for path, text in strings if (ref := _unknown_placeholder(text, properties)) is not None), None)
    if unknown is not None:
        report.add(unknown[0], f'contains unknown placeholder "${{{unknown[1]}}}"')


def string_leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from string_leaves(value[key], f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_leaves(item, f"{path}[{index}]")


def iter_placeholders(text: str) -> Iterator[tuple[str, bool]]:
    """Yield ``(inner, closed)`` for each ``${…}`` in ``text`` (first ``}`` closes)."""
    start = text.find("${")
    while start != -1:
        end = text.find("}", start + 2)
        if end == -1:
            yield text[start + 2 :], False
            return
        yield text[start + 2 : end], True
        start = text.find("${", end + 1)


def _syntax_problem(text: str) -> str | None:
    if "${" not in text:
        return None
    for inner, closed in iter_placeholders(text):
        if not closed:
            return f'contains an unclosed placeholder: "${{{inner}"'
        if not inner.strip():
            return f'contains an empty placeholder: "${{{inner}}}"'
    return None


def placeholder_reference(inner: str) -> str:
    for prefix in _ENCODINGS:
        if inner.startswith(prefix):
            return inner[len(prefix) :]
    return inner


def _unknown_placeholder(text: str, properties: set[str]) -> str | None:
    if "${" not in text:
        return None
    for inner, closed in iter_placeholders(text):
        if not closed or not inner.strip():
            continue
        ref = placeholder_reference(inner)
        if ref == "parameters":
            continue
        if ref.startswith("secrets.") and ref[len("secrets.") :].strip():
            continue
        if ref.split(".", 1)[0] in properties and ref.split(".", 1)[0]:
            continue
        return inner
    return None


def _check_parameters(parameters: Any, field: str, report: Report) -> set[str]:
    """Validates the schema; returns the declared property names."""
    if not isinstance(parameters, dict):
        if isinstance(parameters, bool):
            report.add(
                field,
                f"must be valid JSON: the parameters must be a JSON Schema mapping (type: object, properties: …), "
                f"not {json_value_words(parameters)}",
            )
        else:
            report.add(
                field,
                f"must be a valid JSON Schema: a schema is a mapping (type: object, properties: …), not {json_value_words(parameters)}",
            )
        return set()
    problem = schema_problem(json.dumps(parameters, sort_keys=True))
    if problem:
        report.add(field, problem)
    properties = parameters.get("properties")
    if properties is None:
        return set()
    if not isinstance(properties, dict):
        report.add(
            field,
            f"must be valid JSON: properties must be a mapping of parameter names to their schemas, not {json_value_words(properties)}",
        )
        return set()
    return set(properties)


@functools.lru_cache(maxsize=1024)
def schema_problem(canonical: str) -> str | None:
    """Message for an invalid JSON Schema (cached: packs repeat the same shapes)."""
    schema = json.loads(canonical)
    for error in _META_VALIDATOR.iter_errors(schema):
        path = list(error.absolute_path)
        if path and path[-1] == "type" and _is_type_value(error.instance):
            continue  # the reference does not check `type` against the vocabulary
        pointer = "/" + "/".join(str(p) for p in path)
        return f"must be a valid JSON Schema: jsonschema: {pointer}: {error.message}"
    for pointer, pattern in _patterns(schema, ""):
        problem = re2_error(pattern)
        if problem:
            return f"must be a valid JSON Schema: jsonschema: {pointer}: {problem}"
    for pointer, ref in _refs(schema, ""):
        if not _resolves(schema, ref):
            return f'must resolve as a valid JSON Schema: jsonschema: {pointer}: $ref "{ref}" cannot be resolved locally'
    return None


def _is_type_value(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _patterns(node: Any, pointer: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{pointer}/{key}"
            if key == "pattern" and isinstance(value, str):
                yield here, value
            elif key == "patternProperties" and isinstance(value, dict):
                for pattern in value:
                    yield f"{here}/{pattern}", pattern
            if key not in ("const", "enum", "default", "examples"):
                yield from _patterns(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _patterns(value, f"{pointer}/{index}")


def _refs(node: Any, pointer: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield f"{pointer}/{key}", value
            elif key not in ("const", "enum", "default", "examples"):
                yield from _refs(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _refs(value, f"{pointer}/{index}")


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    """Local resolution only: ``#``, ``#/json/pointer`` and ``#anchor`` within the document."""
    if not ref.startswith("#"):
        return False
    fragment = ref[1:]
    if not fragment:
        return True
    if not fragment.startswith("/"):
        return _has_anchor(schema, fragment)
    node: Any = schema
    for part in fragment[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return isinstance(node, (dict, bool))


def _has_anchor(node: Any, anchor: str) -> bool:
    if isinstance(node, dict):
        if node.get("$anchor") == anchor or node.get("$dynamicAnchor") == anchor:
            return True
        return any(_has_anchor(v, anchor) for v in node.values())
    if isinstance(node, list):
        return any(_has_anchor(v, anchor) for v in node)
    return False


def validate_single_tool(definition: Any, field_prefix: str) -> Report:
    report = Report()
    if not isinstance(definition, dict):
        report.add(field_prefix, "must be a JSON object with name, parameters and implementation")
        return report
    problem = _shape_problem([definition])
    if problem:
        report.add(field_prefix, f"must be a valid tool definition: {problem}")
        return report
    check_tool(definition, field_prefix, report)
    implementation = definition.get("implementation")
    if isinstance(implementation, dict) and not is_mock(implementation):
        name = (definition.get("name") or "").strip()
        primitive = implementation.get("primitive")
        if name and isinstance(primitive, str) and primitive.strip() == name:
            report.add(field_prefix, f'tool "{name}" has a delegation cycle through "{name}"')
    return report


__all__ = ["jsonschema", "validate_tools", "validate_single_tool", "iter_placeholders"]
