"""JSON validators: json_schema and json_path_match (+ helpers reused by file validators)."""

from __future__ import annotations

import json
import re
from typing import TypeGuard

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from engine.scoring.references import stringify
from engine.scoring.validators.base import EvaluatorError, Outcome, PackError, ValidatorCall, binary, register
from engine.scoring.validators.schema_regex import Re2Draft202012Validator, check_schema_patterns
from engine.types import JSON

SUPPORTED_DRAFTS = {
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-07/schema",
}
_NAME = re.compile(r"\.([A-Za-z0-9_-]+)")
_INDEX = re.compile(r"\[(\d+)\]")
_QUOTED = re.compile(r"\[(?:'([^']*)'|\"([^\"]*)\")\]")
_BARE = re.compile(r"\[([^\]'\"]+)\]")


def schema_validator(schema: JSON) -> Validator:
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            raise PackError(f"schema is not valid JSON: {exc}") from exc
    if not isinstance(schema, (dict, bool)):
        raise PackError("schema must be a JSON object")
    if isinstance(schema, dict):
        draft = str(schema.get("$schema", "")).rstrip("#")
        if draft and draft not in SUPPORTED_DRAFTS:
            raise PackError(f"unsupported JSON schema draft {schema['$schema']!r}")
        if draft:
            # draft-07 is validated by the 2020-12 engine on the shared subset (§5.4).
            schema = {k: v for k, v in schema.items() if k != "$schema"}
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise PackError(f"invalid JSON schema: {exc.message}") from exc
    check_schema_patterns(schema)  # patterns run on RE2: linear time whatever the agent outputs
    return Re2Draft202012Validator(schema)  # type: ignore[no-any-return]


def schema_outcome(validator: Validator, text: str) -> Outcome:
    try:
        instance = json.loads(text)
    except ValueError as exc:
        return binary(False, f"output is not a single JSON document: {exc}", None, text)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
        return binary(False, f"schema validation failed at {where}: {first.message}", None, text)
    return binary(True, "output matches the schema", None, text)


@register("json_schema")
def json_schema(call: ValidatorCall) -> Outcome:
    validator = schema_validator(call.expected())
    outcome = schema_outcome(validator, call.actual())
    outcome.expected = call.expected_from
    return outcome


def parse_path(path: str) -> list[str | int]:
    path = path.strip()
    if not path.startswith("$"):
        raise PackError(f"JSON path {path!r} must start with $")
    segments: list[str | int] = []
    pos = 1
    while pos < len(path):
        for pattern, convert in ((_NAME, str), (_INDEX, int), (_QUOTED, None), (_BARE, str)):
            match = pattern.match(path, pos)
            if match:
                if convert is None:
                    segments.append(match.group(1) if match.group(1) is not None else match.group(2))
                else:
                    segments.append(convert(match.group(1)))
                pos = match.end()
                break
        else:
            raise PackError(f"unsupported JSON path syntax at {path[pos:]!r}")
    return segments


def lookup(document: JSON, segments: list[str | int]) -> tuple[bool, JSON]:
    current = document
    for segment in segments:
        if isinstance(segment, int) and isinstance(current, list):
            if segment >= len(current):
                return False, None
            current = current[segment]
        elif isinstance(current, dict) and str(segment) in current:
            current = current[str(segment)]
        elif isinstance(current, list) and isinstance(segment, str) and segment.isdigit() and int(segment) < len(current):
            current = current[int(segment)]
        else:
            return False, None
    return True, current


def is_number(value: JSON) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def deep_equal(a: JSON, b: JSON) -> bool:
    if is_number(a) and is_number(b):
        return float(a) == float(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def compare(actual: JSON, comparator: str, value: JSON) -> tuple[bool, str]:
    if comparator == "equals":
        return deep_equal(actual, value), f"{json.dumps(actual)} equals {json.dumps(value)}"
    if comparator == "contains":
        if isinstance(actual, str):
            return stringify(value) in actual, "substring check"
        if isinstance(actual, list):
            return any(deep_equal(item, value) for item in actual), "element membership"
        return json.dumps(value) in json.dumps(actual), "substring of JSON text"
    if comparator in ("greater_than", "less_than"):
        if not (is_number(actual) and is_number(value)):
            raise EvaluatorError(f"{comparator} needs numbers (got {json.dumps(actual)} and {json.dumps(value)})")
        passed = float(actual) > float(value) if comparator == "greater_than" else float(actual) < float(value)
        return passed, f"{actual} {'>' if comparator == 'greater_than' else '<'} {value}"
    raise PackError(f"unsupported comparator {comparator!r}")


@register("json_path_match")
def json_path_match(call: ValidatorCall) -> Outcome:
    spec_text = call.expected().strip()
    if spec_text.startswith("$"):
        path, comparator, value = spec_text, "exists", None
    else:
        try:
            spec = json.loads(spec_text)
        except ValueError as exc:
            raise PackError(f"expected must be a JSON path or {{path, comparator, value}}: {exc}") from exc
        if not isinstance(spec, dict) or not isinstance(spec.get("path"), str):
            raise PackError("expected must be a JSON path or an object with a path")
        path, value = spec["path"], spec.get("value")
        comparator = spec.get("comparator") or ("equals" if "value" in spec else "exists")
    segments = parse_path(path)
    actual_text = call.actual()
    try:
        document = json.loads(actual_text)
    except ValueError as exc:
        return binary(False, f"output is not valid JSON: {exc}", spec_text, actual_text)
    found, actual = lookup(document, segments)
    if not found:
        return binary(False, f"path {path} not found", spec_text, actual_text)
    if comparator == "exists":
        return binary(True, f"path {path} exists", spec_text, actual)
    passed, detail = compare(actual, comparator, value)
    return binary(passed, f"{path}: {detail}" + ("" if passed else " failed"), value, actual)
