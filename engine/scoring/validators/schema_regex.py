"""JSON Schema regexes on RE2, a linear-time engine (issue 14).

``jsonschema`` evaluates ``pattern`` and ``patternProperties`` (and ``additionalProperties``
next to them) with Python's backtracking ``re``: a pack's ``^(a+)+$`` against an agent's
``aaaa…!`` takes seconds at 26 characters and doubles with each one more. These keywords are
replaced by RE2 versions; schemas are checked up front so an RE2-incompatible pattern (a
backreference, a lookaround) is a pack error rather than a silent fallback, and the one keyword
we do not reimplement (``unevaluatedProperties`` beside ``patternProperties``) is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import re2
from jsonschema import Draft202012Validator, ValidationError, validators

from engine.scoring.validators.base import PackError
from engine.types import JSON


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:  # a re2 pattern (re2 ships no type information)
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern).search(text) is not None


def check_schema_patterns(schema: JSON) -> None:
    """PackError for a regex RE2 cannot run, or for a keyword combination we cannot run on RE2."""
    if isinstance(schema, list):
        for item in schema:
            check_schema_patterns(item)
        return
    if not isinstance(schema, dict):
        return
    pattern_properties, own = schema.get("patternProperties"), schema.get("pattern")
    patterns = list(pattern_properties) if isinstance(pattern_properties, dict) else []
    if isinstance(own, str):
        patterns.append(own)
    for pattern in patterns:
        try:
            _compiled(pattern)
        except Exception as exc:  # noqa: BLE001 - re2 raises its own error type
            message = exc.args[0] if exc.args else exc
            text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
            raise PackError(f"schema pattern {pattern!r} is not supported (RE2 syntax): {text}") from None
    if patterns and "unevaluatedProperties" in schema and "patternProperties" in schema:
        raise PackError("unevaluatedProperties next to patternProperties is not supported")
    for value in schema.values():
        if isinstance(value, (dict, list)):
            check_schema_patterns(value)


# jsonschema keyword functions: (validator, the keyword's value, the instance, the schema). Draft 2020-12's
# "string" and "object" types are exactly ``str`` and ``dict``.


def _pattern(validator: Any, pattern: str, instance: JSON, schema: dict[str, JSON]) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, pattern_properties: dict[str, JSON], instance: JSON, schema: dict[str, JSON]
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra_schema: JSON, instance: JSON, schema: dict[str, JSON]) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    declared, pattern_properties = schema.get("properties"), schema.get("patternProperties")
    properties = declared if isinstance(declared, dict) else {}
    patterns = list(pattern_properties) if isinstance(pattern_properties, dict) else []
    extras = [k for k in instance if k not in properties and not any(_search(p, k) for p in patterns)]
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        if patterns:
            joined = ", ".join(repr(each) for each in sorted(extras))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {', '.join(repr(p) for p in sorted(patterns))}")
        else:
            listed = ", ".join(repr(each) for each in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


_extend: Any = validators.extend  # jsonschema's extend is untyped
Re2Draft202012Validator = _extend(
    Draft202012Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties},
)
