"""The primitive registry: every primitive module registers one ``PrimitiveSpec`` at import.

``catalogue()`` is the single source the Django UI/API read the primitive list from.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jsonschema

if TYPE_CHECKING:
    from engine.tools.context import ToolContext
    from engine.types import ToolResult

KINDS = ("always", "file", "data", "network", "build", "shell")
FORBIDDEN_FORMATS = frozenset({"uri", "uri-reference", "iri", "email", "uuid", "date-time", "date", "time", "ipv4", "ipv6", "hostname"})

Executor = Callable[[dict[str, Any]], "ToolResult"]


class RegistryError(Exception):
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class PrimitiveSpec:
    name: str
    kind: str  # always (submit) | file | data | network | build | shell (exec)
    description: str
    parameters: dict[str, Any]
    create: Callable[[ToolContext], Executor]
    examples: tuple[dict[str, Any], ...] = ()
    accepts_secrets: bool = False

    def as_catalogue_entry(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "parameters": self.parameters,
            "accepts_secrets": self.accepts_secrets,
            "examples": [dict(e) for e in self.examples],
        }


_REGISTRY: dict[str, PrimitiveSpec] = {}
_LOADED = False


def schema_problems(schema: Any, where: str = "parameters") -> list[str]:
    """Portability rules for OpenAI + Anthropic tool schemas."""
    problems: list[str] = []
    if isinstance(schema, dict):
        is_object = (
            schema.get("type") == "object"
            or (isinstance(schema.get("type"), list) and "object" in schema["type"])
            or "properties" in schema
        )
        if is_object:
            extra = schema.get("additionalProperties")
            if not (extra is False or (isinstance(extra, dict) and extra)):
                problems.append(f"{where}: object must close additionalProperties")
        if schema.get("format") in FORBIDDEN_FORMATS:
            problems.append(f"{where}: format {schema['format']!r} is not portable")
        if "default" in schema and where == "parameters":
            problems.append(f"{where}: top-level default is not portable")
        for key in ("properties", "$defs", "definitions"):
            for name, sub in (schema.get(key) or {}).items():
                problems += schema_problems(sub, f"{where}.{key}.{name}")
        for key in ("items", "additionalProperties", "not"):
            if isinstance(schema.get(key), dict):
                problems += schema_problems(schema[key], f"{where}.{key}")
        for key in ("anyOf", "oneOf", "allOf"):
            for i, sub in enumerate(schema.get(key) or []):
                problems += schema_problems(sub, f"{where}.{key}[{i}]")
    return problems


def register(spec: PrimitiveSpec) -> PrimitiveSpec:
    if spec.name in _REGISTRY:
        raise RegistryError(f'primitive "{spec.name}" is registered twice')
    if spec.kind not in KINDS:
        raise RegistryError(f'primitive "{spec.name}" has unknown kind "{spec.kind}"')
    if not spec.description or "\n" in spec.description:
        raise RegistryError(f'primitive "{spec.name}" needs a one-line description')
    jsonschema.Draft202012Validator.check_schema(spec.parameters)
    problems = schema_problems(spec.parameters)
    if problems:
        raise RegistryError(f'primitive "{spec.name}": ' + "; ".join(problems))
    validator = jsonschema.Draft202012Validator(spec.parameters)
    for i, example in enumerate(spec.examples):
        errors = list(validator.iter_errors(example))
        if errors:
            raise RegistryError(f'primitive "{spec.name}" example {i} is invalid: {errors[0].message}')
    if spec.accepts_secrets and spec.name != "http_request":
        raise RegistryError("only http_request may accept secrets")
    _REGISTRY[spec.name] = spec
    return spec


def load() -> dict[str, PrimitiveSpec]:
    global _LOADED
    if not _LOADED:
        import engine.tools.primitives as package

        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
        _LOADED = True
    return _REGISTRY


def primitives() -> dict[str, PrimitiveSpec]:
    return dict(load())


def catalogue() -> list[dict[str, Any]]:
    """Every engine primitive: name, kind, description, parameters, accepts_secrets, examples."""
    return [spec.as_catalogue_entry() for _, spec in sorted(load().items())]
