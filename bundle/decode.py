"""Schema-driven decoding of composed YAML nodes into plain dicts (spec §1.1 steps 2–3).

Two modes mirror the reference: *lenient* (the bundle: unknown keys dropped, string fields keep
the literal text of any scalar, integer fields reject strings) and *strict* (``evaluation_spec``:
unknown keys and JSON type mismatches are decode errors). Decoded structs only contain the keys
that were present and non-null, so "present vs zero" stays visible to validation and manifest.
All type errors are collected (yaml.v3 reports every unmarshal error), then processing stops.
"""

from __future__ import annotations

import uuid
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bundle.errors import DecodeFailure, ValidationError
from bundle.parse import (
    MAX_DEPTH,
    PLAIN,
    STR_TAG,
    Budget,
    build_any,
    check_node,
    depth_failure,
    duplicate_failure,
    key_text,
    resolve_scalar,
    scalar_kind,
)

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "int": (-(2**63), 2**63 - 1)}


class Ctx:
    __slots__ = ("budget", "errors", "ignored")

    def __init__(self) -> None:
        self.budget = Budget()
        self.errors: list[ValidationError] = []
        # Unknown keys the lenient decoder dropped, as (path, line): warnings, never errors.
        self.ignored: list[tuple[str, int]] = []

    def fail(self, path: str, node: Node, message: str) -> None:
        self.errors.append(ValidationError(path, message, node.start_mark.line + 1))


_FOUND = {
    "!!map": "a mapping",
    "!!seq": "a list",
    "!!str": "text",
    "!!int": "a whole number",
    "!!float": "a number",
    "!!bool": "true/false",
    "!!null": "nothing",
}


def wanted_words(type_name: str) -> str:
    """What a field holds, for a person (issue 25: "cannot unmarshal !!str `one` into int32")."""
    if type_name.startswith("[]"):
        return "a list"
    if type_name.startswith("map["):
        return "a mapping"
    if type_name.startswith("int"):
        return "a whole number"
    return {"float64": "a number", "bool": "true or false", "string": "text", "uuid.UUID": "an artifact id (a UUID)"}.get(
        type_name, "a mapping"
    )


def json_value_words(value: Any) -> str:
    """What a decoded JSON/YAML value is, for a person: ``text `x```, ``a list``, ``true/false``…"""
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"true/false `{str(value).lower()}`"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return f"a whole number `{value:g}`" if isinstance(value, float) else f"a whole number `{value}`"
    if isinstance(value, float):
        return f"a number `{value:g}`"
    text = str(value)
    return f"text `{text}`" if text and len(text) < 60 else "text"


def json_mismatch(type_name: str, value: Any) -> str:
    """``must be a number, not text `high```: the issue-25 wording for a JSON value of the wrong
    type (``type_name`` as the reference's decoder names it: ``float64``, ``[]string``, ``bool``…)."""
    return f"must be {wanted_words(type_name)}, not {json_value_words(value)}"


class Schema:
    strict = False
    type_name = "value"

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:  # pragma: no cover
        raise NotImplementedError

    def zero(self) -> Any:
        return None

    def mismatch(self, node: Node, path: str, ctx: Ctx) -> None:
        """``must be a whole number, not text `one```: the field and the line come with the error."""
        text = node.value if isinstance(node, ScalarNode) else ""
        shown = f" `{text}`" if text and len(text) < 60 else ""
        ctx.fail(path, node, f"must be {wanted_words(self.type_name)}, not {_FOUND[scalar_kind(node)]}{shown}")


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == PLAIN and node.value in ("", "~", "null", "Null", "NULL")


class Str(Schema):
    type_name = "string"

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict

    def zero(self) -> Any:
        return ""

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if isinstance(node, ScalarNode):
            if node.tag == STR_TAG:
                return node.value
            value = resolve_scalar(node)
            if value is None:
                return None
            if isinstance(value, str):
                return value
            if not self.strict:
                return node.value  # string fields keep the literal text of numbers/bools
        self.mismatch(node, path, ctx)
        return None


class Int(Schema):
    def __init__(self, bits: str = "int32", strict: bool = False) -> None:
        self.type_name = bits
        self.strict = strict

    def zero(self) -> Any:
        return 0

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if isinstance(node, ScalarNode):
            value = resolve_scalar(node)
            if value is None:
                return None
            if isinstance(value, float) and value.is_integer() and node.tag != STR_TAG:
                value = int(value)
            if isinstance(value, int) and not isinstance(value, bool):
                low, high = _INT_RANGES[self.type_name]
                if low <= value <= high:
                    return value
                ctx.fail(path, node, f"must be a whole number from {low} to {high}, not {value}")
                return None
        self.mismatch(node, path, ctx)
        return None


class Float(Schema):
    type_name = "float64"

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict

    def zero(self) -> Any:
        return 0.0

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if isinstance(node, ScalarNode):
            value = resolve_scalar(node)
            if value is None:
                return None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return value
        self.mismatch(node, path, ctx)
        return None


_LEGACY_BOOLS = {
    "y": True,
    "Y": True,
    "yes": True,
    "Yes": True,
    "YES": True,
    "on": True,
    "On": True,
    "ON": True,
    "n": False,
    "N": False,
    "no": False,
    "No": False,
    "NO": False,
    "off": False,
    "Off": False,
    "OFF": False,
}


class Bool(Schema):
    type_name = "bool"

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict

    def zero(self) -> Any:
        return False

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if isinstance(node, ScalarNode):
            value = resolve_scalar(node)
            if value is None or isinstance(value, bool):
                return value
            # yaml.v3 accepts YAML 1.1 booleans when the target is a typed bool.
            if not self.strict and isinstance(value, str) and value in _LEGACY_BOOLS:
                return _LEGACY_BOOLS[value]
        self.mismatch(node, path, ctx)
        return None


class UUIDStr(Schema):
    type_name = "uuid.UUID"

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        text = Str().decode(node, path, ctx, depth)
        if text is None or text == "":
            return None
        try:
            return str(uuid.UUID(text))
        except ValueError:
            ctx.fail(path, node, f'must be an artifact id (a UUID such as 0b6f…-…), not "{text}"')
            return None


class AnyValue(Schema):
    """Free-form JSON-ish value with YAML 1.2 typing."""

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        return build_any(node, ctx.budget, depth)


class FreeMap(Schema):
    """``map[string]any``: must be a mapping (or null)."""

    type_name = "map[string]interface {}"

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if _is_null(node):
            return None
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, ctx)
            check_node(node, ctx.budget, depth)
            return None
        return build_any(node, ctx.budget, depth)


class ListOf(Schema):
    def __init__(self, item: Schema, strict: bool = False) -> None:
        self.item = item
        self.strict = strict
        self.type_name = f"[]{item.type_name}"

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if _is_null(node):
            return None
        if not isinstance(node, SequenceNode):
            self.mismatch(node, path, ctx)
            check_node(node, ctx.budget, depth)
            return None
        if depth > MAX_DEPTH:
            raise depth_failure(node)
        ctx.budget.visit(node)
        item = self.item
        out = []
        for index, child in enumerate(node.value):
            value = item.decode(child, f"{path}[{index}]", ctx, depth + 1)
            out.append(item.zero() if value is None and not isinstance(item, AnyValue) else value)
        return out


class MapOf(Schema):
    def __init__(self, value: Schema, strict: bool = False) -> None:
        self.value = value
        self.strict = strict
        self.type_name = f"map[string]{value.type_name}"

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if _is_null(node):
            return None
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, ctx)
            check_node(node, ctx.budget, depth)
            return None
        if depth > MAX_DEPTH:
            raise depth_failure(node)
        ctx.budget.visit(node)
        out: dict[str, Any] = {}
        key_nodes: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = key_text(key_node)
            if key in key_nodes:
                raise duplicate_failure(key, key_nodes[key], key_node)
            key_nodes[key] = key_node
            value = self.value.decode(value_node, f"{path}[{key}]", ctx, depth + 1)
            out[key] = self.value.zero() if value is None else value
        return out


class Struct(Schema):
    def __init__(self, name: str, fields: dict[str, Schema], strict: bool = False) -> None:
        self.type_name = name
        self.fields = fields
        self.strict = strict

    def zero(self) -> Any:
        return {}

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if _is_null(node):
            return None
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, ctx)
            check_node(node, ctx.budget, depth)
            return None
        if depth > MAX_DEPTH:
            raise depth_failure(node)
        ctx.budget.visit(node)
        fields = self.fields
        prefix = f"{path}." if path else ""
        out: dict[str, Any] = {}
        key_nodes: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = key_text(key_node)
            if key in key_nodes:
                raise duplicate_failure(key, key_nodes[key], key_node)
            key_nodes[key] = key_node
            schema = fields.get(key)
            if schema is None:
                if self.strict:
                    ctx.errors.append(
                        ValidationError(
                            prefix + key,
                            f'is not a field of the evaluation spec: remove "{key}" or check its spelling',
                            key_node.start_mark.line + 1,
                        )
                    )
                else:
                    ctx.ignored.append((prefix + key, key_node.start_mark.line + 1))
                check_node(value_node, ctx.budget, depth + 1)
                continue
            value = schema.decode(value_node, prefix + key, ctx, depth + 1)
            if value is not None:
                out[key] = value
        return out


class StrOrStruct(Schema):
    """Scorecard dimension: legacy string or strict object."""

    def __init__(self, struct: Struct) -> None:
        self.struct = struct
        self.strict = True
        self.type_name = struct.type_name

    def zero(self) -> Any:
        return ""

    def decode(self, node: Node, path: str, ctx: Ctx, depth: int) -> Any:
        if isinstance(node, MappingNode):
            return self.struct.decode(node, path, ctx, depth)
        return Str(strict=True).decode(node, path, ctx, depth)


def decode_document(root: Node | None, schema: Struct) -> tuple[dict[str, Any], list[ValidationError], list[tuple[str, int]]]:
    """Decode the whole bundle: (bundle, decode errors, ignored keys as (path, line)).

    Raises ``DecodeFailure`` for fatal document errors.
    """
    ctx = Ctx()
    if root is None:
        return {}, [], []
    if not isinstance(root, MappingNode):
        line = root.start_mark.line + 1
        raise DecodeFailure(f"the top level must be a mapping (pack:, version:, …), not {_FOUND[scalar_kind(root)]}", line)
    return schema.decode(root, "", ctx, 0), ctx.errors, ctx.ignored


__all__ = [
    "AnyValue",
    "Bool",
    "Ctx",
    "Float",
    "FreeMap",
    "Int",
    "ListOf",
    "MapOf",
    "Schema",
    "Str",
    "StrOrStruct",
    "Struct",
    "UUIDStr",
    "decode_document",
]
