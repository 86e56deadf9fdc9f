"""YAML 1.2 parsing on top of libyaml's C parser.

Why this design (measured, see docs/pack-format-differences.md): ruamel.yaml is ~5x slower than
a bare ``yaml.load(Loader=CSafeLoader)``. Instead we let libyaml's C composer build the node
graph (the same work the baseline does), with a resolver that tags every plain scalar as
"unresolved", and then convert nodes to values ourselves with the YAML 1.2 core schema. Nodes
keep their marks, so line numbers cost nothing until an error needs one (``line_for``).

Guards: size (1 MiB), UTF-8, blank document, nesting depth, alias expansion budget (billion
laughs is rejected by counting the *expanded* size of re-used nodes, never by expanding them),
duplicate mapping keys.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml._yaml import CParser  # libyaml is required: it is what makes this fast
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bundle.errors import DecodeFailure

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_ALIAS_EXPANSION = 10_000

STR_TAG = "tag:yaml.org,2002:str"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
BOOL_TAG = "tag:yaml.org,2002:bool"
NULL_TAG = "tag:yaml.org,2002:null"
MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
PLAIN = "?"  # marker tag: plain scalar, resolve with the YAML 1.2 core schema

_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT_RE = re.compile(r"[-+]?[0-9]+\Z")
_OCT_RE = re.compile(r"0o[0-7]+\Z")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_SPECIAL_FLOAT_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z")
# Characters that can start a non-string plain scalar; anything else is a string fast.
_NUMERIC_START = set("0123456789+-.~nNtTfF")


class _Resolver:
    """Tags explicit tags as given, plain scalars as ``PLAIN``, quoted scalars as str."""

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return PLAIN if implicit[0] else STR_TAG
        if kind is SequenceNode:
            return SEQ_TAG
        return MAP_TAG


class _Composer(CParser, _Resolver):
    pass


def _non_finite(text: str, line: int) -> DecodeFailure:
    return DecodeFailure(
        f"yaml: line {line}: non-finite number {text!r} is not supported (JSON cannot carry it)",
        line,
    )


def resolve_scalar(node: ScalarNode) -> Any:
    """YAML 1.2 core schema value of a scalar node (``yes``/``on``/dates stay strings)."""
    tag = node.tag
    text = node.value
    if tag == PLAIN:
        if not text or text[0] not in _NUMERIC_START:
            return text
        if text in _NULLS:
            return None
        if text in _BOOLS:
            return _BOOLS[text]
        if _INT_RE.match(text):
            return int(text)
        if _FLOAT_RE.match(text):
            return float(text)
        if _OCT_RE.match(text):
            return int(text[2:], 8)
        if _HEX_RE.match(text):
            return int(text[2:], 16)
        if _SPECIAL_FLOAT_RE.match(text):
            raise _non_finite(text, node.start_mark.line + 1)
        return text
    if tag == STR_TAG:
        return text
    return _explicit(node)


def _explicit(node: ScalarNode) -> Any:
    tag, text = node.tag, node.value
    line = node.start_mark.line + 1
    try:
        if tag == INT_TAG:
            if _OCT_RE.match(text):
                return int(text[2:], 8)
            if _HEX_RE.match(text):
                return int(text[2:], 16)
            return int(text)
        if tag == FLOAT_TAG:
            value = float(text)
            if not math.isfinite(value):
                raise _non_finite(text, line)
            return value
        if tag == BOOL_TAG:
            return _BOOLS[text]
        if tag == NULL_TAG:
            if text not in _NULLS:
                raise KeyError(text)
            return None
    except (ValueError, KeyError):
        raise DecodeFailure(f"yaml: line {line}: cannot decode {text!r} as {tag}", line) from None
    if tag in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"):
        return text
    if tag.startswith("!") or tag.startswith("tag:"):
        # Local/unknown tags are ignored like yaml.v3 does for interface{} targets: keep text.
        return text
    return text


def scalar_kind(node: Node) -> str:
    """yaml.v3-style short tag of a node, for type-mismatch messages."""
    if isinstance(node, MappingNode):
        return "!!map"
    if not isinstance(node, ScalarNode):
        return "!!seq"
    try:
        value = resolve_scalar(node)
    except DecodeFailure:
        return "!!float"
    if value is None:
        return "!!null"
    if isinstance(value, bool):
        return "!!bool"
    if isinstance(value, int):
        return "!!int"
    if isinstance(value, float):
        return "!!float"
    return "!!str"


def compose(source: str | bytes) -> Node | None:
    """Run all document-level guards and compose the node graph. Raises ``DecodeFailure``."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        if len(raw) > MAX_BYTES:
            raise DecodeFailure(f"bundle exceeds the maximum size of {MAX_BYTES} bytes", None)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeFailure(f"bundle must be valid UTF-8 (invalid byte at offset {exc.start})", None) from None
    elif isinstance(source, str):
        text = source
        if len(text) > MAX_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
            raise DecodeFailure(f"bundle exceeds the maximum size of {MAX_BYTES} bytes", None)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise DecodeFailure("bundle must be valid UTF-8 (lone surrogate)", None) from None
    else:
        raise DecodeFailure("bundle must be YAML text", None)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise DecodeFailure("is required", None, field="bundle")
    loader = _Composer(text)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        where = f"line {line}, column {mark.column + 1}: " if mark is not None else ""
        raise DecodeFailure(f"not valid YAML: {where}{problem}", line) from None
    except yaml.YAMLError as exc:
        # PyYAML's text quotes the source with a caret under it; the first line says what is wrong.
        raise DecodeFailure(f"not valid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", None) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise DecodeFailure(f"yaml: {type(exc).__name__}", None) from None
    finally:
        loader.dispose()


class Budget:
    """Tracks alias re-use across one document so expansion stays bounded."""

    __slots__ = ("seen", "sizes", "spent")

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.sizes: dict[int, int] = {}
        self.spent = 0

    def visit(self, node: Node) -> None:
        """Called for every collection node; charges re-visits (aliases) by expanded size."""
        key = id(node)
        if key in self.seen:
            self.spent += self._size(node, 0)
            if self.spent > MAX_ALIAS_EXPANSION:
                line = node.start_mark.line + 1
                raise DecodeFailure(
                    f"yaml: line {line}: alias expansion exceeds the limit of {MAX_ALIAS_EXPANSION} nodes",
                    line,
                )
        else:
            self.seen.add(key)

    def _size(self, node: Node, depth: int) -> int:
        key = id(node)
        cached = self.sizes.get(key)
        if cached is not None:
            return cached
        if depth > MAX_DEPTH:
            line = node.start_mark.line + 1
            raise DecodeFailure(f"yaml: line {line}: nesting exceeds depth {MAX_DEPTH}", line)
        total = 1
        if isinstance(node, SequenceNode):
            for child in node.value:
                total += self._size(child, depth + 1)
        elif isinstance(node, MappingNode):
            for k, v in node.value:
                total += self._size(k, depth + 1) + self._size(v, depth + 1)
        self.sizes[key] = min(total, 1 << 40)
        return self.sizes[key]


def key_text(node: Node) -> str:
    """Mapping keys become strings (JSON objects); a collection key is a decode error."""
    if not isinstance(node, ScalarNode):
        line = node.start_mark.line + 1
        raise DecodeFailure(f"yaml: line {line}: mapping keys must be scalars", line)
    text: str = node.value
    if node.tag == PLAIN or node.tag == STR_TAG:
        return text
    value = resolve_scalar(node)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return text


def duplicate_failure(key: str, first: Node, second: Node) -> DecodeFailure:
    line = second.start_mark.line + 1
    return DecodeFailure(
        f'yaml: line {line}: mapping key "{key}" already defined at line {first.start_mark.line + 1}',
        line,
    )


def depth_failure(node: Node) -> DecodeFailure:
    line = node.start_mark.line + 1
    return DecodeFailure(f"yaml: line {line}: nesting exceeds depth {MAX_DEPTH}", line)


def build_any(node: Node, budget: Budget, depth: int = 0) -> Any:
    """Free-form value (payload, definition, tool_policy…) with YAML 1.2 core typing."""
    if isinstance(node, ScalarNode):
        return resolve_scalar(node)
    if depth > MAX_DEPTH:
        raise depth_failure(node)
    budget.visit(node)
    if isinstance(node, SequenceNode):
        return [build_any(child, budget, depth + 1) for child in node.value]
    result: dict[str, Any] = {}
    key_nodes: dict[str, Node] = {}
    for key_node, value_node in node.value:
        key = key_text(key_node)
        if key in result:
            raise duplicate_failure(key, key_nodes[key], key_node)
        key_nodes[key] = key_node
        result[key] = build_any(value_node, budget, depth + 1)
    return result


def check_node(node: Node, budget: Budget, depth: int = 0) -> None:
    """Guards for sub-trees that are decoded into nothing (ignored keys): yaml.v3 still
    rejects duplicate keys there, and we still bound depth and alias expansion."""
    if isinstance(node, ScalarNode):
        resolve_scalar(node)
        return
    if depth > MAX_DEPTH:
        raise depth_failure(node)
    budget.visit(node)
    if isinstance(node, SequenceNode):
        for child in node.value:
            check_node(child, budget, depth + 1)
        return
    key_nodes: dict[str, Node] = {}
    for key_node, value_node in node.value:
        key = key_text(key_node)
        if key in key_nodes:
            raise duplicate_failure(key, key_nodes[key], key_node)
        key_nodes[key] = key_node
        check_node(value_node, budget, depth + 1)


# ---------------------------------------------------------------------------------------------
# Line lookup for error field paths

_PATH_TOKEN = re.compile(r'\.?([^.\[\s]+)|\["((?:[^"\\]|\\.)*)"\]|\[([^\]]*)\]')


def line_for(root: Node | None, field: str) -> int | None:
    """Best line for a field path: the deepest node the path reaches (key line for members)."""
    if root is None:
        return None
    field = field.split(" (", 1)[0]
    node: Node = root
    line = root.start_mark.line + 1
    for match in _PATH_TOKEN.finditer(field):
        name, quoted, bracket = match.groups()
        if name is None and quoted is None and bracket is not None and bracket.isdigit():
            if not isinstance(node, SequenceNode):
                break
            index = int(bracket)
            if index >= len(node.value):
                break
            node = node.value[index]
            line = node.start_mark.line + 1
            continue
        key = name if name is not None else (quoted if quoted is not None else bracket)
        if not isinstance(node, MappingNode):
            break
        found = _member(node, key)
        if found is None and key == "cases":
            found = _member(node, "items")
        if found is None:
            break
        key_node, node = found
        line = key_node.start_mark.line + 1
    return line


def _member(node: MappingNode, key: str | None) -> tuple[Node, Node] | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and (key_node.value == key or key_node.value.strip() == (key or "").strip()):
            return key_node, value_node
    return None
