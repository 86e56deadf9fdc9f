"""Pack composed tools: build-time validation and call-time delegation (runtime.md §2.2)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from engine.tools import templates
from engine.tools.mock import MockConfigError, MockTool

MAX_DEPTH = 8
DEFAULT_PARAMETERS = {"type": "object", "additionalProperties": False}


class ToolsetError(Exception):
    """The tool registry cannot be built; the message says what is wrong (no secret values)."""


class SecretArgs(dict[str, Any]):
    """Resolved ``http_request`` arguments into which ``${secrets.*}`` were substituted.

    Only :func:`resolve_args` builds one (arguments parsed from a model's JSON are plain dicts), so
    ``http_request`` can trust what it says: which secrets the request carries (to check the
    destination against each one's allowed hosts), which headers carry one and whether the body
    does (to drop them on a cross-origin redirect).
    """

    __slots__ = ("secret_body", "secret_headers", "secret_keys")

    def __init__(self, resolved: Mapping[str, Any], *, keys: frozenset[str], headers: frozenset[str], body: bool) -> None:
        super().__init__(resolved)
        self.secret_keys = keys
        self.secret_headers = headers  # lower-case header names
        self.secret_body = body


@dataclasses.dataclass(slots=True)
class CustomTool:
    name: str
    description: str
    parameters: dict[str, Any]
    declared: set[str]
    delegate: str | None = None  # None for mocks
    args_template: Any = None
    secret_keys: set[str] = dataclasses.field(default_factory=set)
    mock: MockTool | None = None
    secret_headers: frozenset[str] = frozenset()  # lower-case names of headers whose template uses a secret
    secret_body: bool = False


def parse_custom(
    items: Any, primitive_names: set[str], secrets: Mapping[str, str], secret_hosts: Mapping[str, Sequence[str]] | None = None
) -> tuple[list[CustomTool], list[str]]:
    """Validate ``tools.custom[]``; returns (tools, warnings). Raises ToolsetError.

    ``secret_hosts`` (each secret's allowed hosts), when given, adds a warning for a tool that uses
    a secret no admin bound to hosts yet: the tool stays visible, and each call fails saying why.
    """
    tools: list[CustomTool] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(items or []):
        if not isinstance(item, dict):
            raise ToolsetError(f"tools.custom[{index}] must be an object")
        name = _new_tool_name(index, item, primitive_names, seen)
        seen.add(name)
        parameters = _parameters(name, item.get("parameters"))
        declared = set((parameters.get("properties") or {}).keys()) if isinstance(parameters.get("properties"), dict) else set()
        implementation = item.get("implementation") or {}
        if not isinstance(implementation, dict):
            raise ToolsetError(f'tool "{name}": implementation must be an object')
        description = str(item.get("description") or "")
        if str(implementation.get("type") or "").strip().lower() == "mock":
            tools.append(_mock_tool(name, description, parameters, declared, implementation))
            continue
        delegate, template, secret_keys = _delegation(name, implementation, declared)
        if secret_keys and not _secrets_usable(name, delegate, template, secret_keys, secrets, secret_hosts, warnings):
            continue
        tools.append(
            CustomTool(
                name, description, parameters, declared, delegate, template, secret_keys,
                secret_headers=_secret_headers(template), secret_body=bool(templates.secret_keys(template.get("body"))),
            )
        )  # fmt: skip
    return tools, warnings


def _new_tool_name(index: int, item: dict[str, Any], primitive_names: set[str], seen: set[str]) -> str:
    """The tool's name, refused when empty or already a primitive's or an earlier tool's."""
    name = str(item.get("name") or "").strip()
    if not name:
        raise ToolsetError(f"tools.custom[{index}]: tool name is required")
    if name in primitive_names or name in seen:
        raise ToolsetError(f'tool "{name}" is already defined')
    return name


def _parameters(name: str, parameters: Any) -> dict[str, Any]:
    """The tool's parameters, a valid JSON Schema object (no parameters when absent)."""
    if parameters is None:
        parameters = dict(DEFAULT_PARAMETERS)
    if not isinstance(parameters, dict):
        raise ToolsetError(f'tool "{name}": parameters must be a valid JSON Schema object')
    try:
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.SchemaError as exc:
        raise ToolsetError(f'tool "{name}": parameters must be a valid JSON Schema ({exc.message})') from None
    return parameters


def _mock_tool(name: str, description: str, parameters: dict[str, Any], declared: set[str], implementation: dict[str, Any]) -> CustomTool:
    try:
        mock = MockTool(name, implementation, declared)
    except MockConfigError as exc:
        raise ToolsetError(str(exc)) from None
    return CustomTool(name, description, parameters, declared, mock=mock)


def _delegation(name: str, implementation: dict[str, Any], declared: set[str]) -> tuple[str, dict[str, Any], set[str]]:
    """``(primitive, args template, secret keys it references)`` of a delegating tool, checked."""
    delegate = str(implementation.get("primitive") or "").strip()
    if not delegate:
        raise ToolsetError(f'tool "{name}": implementation.primitive is required')
    if delegate == name:
        raise ToolsetError(f'tool "{name}" cannot delegate to itself')
    template = implementation.get("args")
    if not isinstance(template, dict) or not template:
        raise ToolsetError(f'tool "{name}": implementation.args must be a non-empty object')
    problems, secret_keys = templates.check(template, declared)
    if problems:
        raise ToolsetError(f'tool "{name}": {problems[0]}')
    return delegate, template, secret_keys


def _secrets_usable(
    name: str,
    delegate: str,
    template: dict[str, Any],
    secret_keys: set[str],
    secrets: Mapping[str, str],
    secret_hosts: Mapping[str, Sequence[str]] | None,
    warnings: list[str],
) -> bool:
    """Whether a tool that uses secrets is offered: only ``http_request`` gets them, never with an
    ``output_path``; a secret not set disables the tool, one without allowed hosts only warns."""
    if delegate != "http_request":
        raise ToolsetError(f'tool "{name}": ${{secrets.*}} may only be passed to the http_request primitive')
    out = template.get("output_path")
    if out is not None and (not isinstance(out, str) or out.strip()):
        raise ToolsetError(f'tool "{name}": a tool that uses secrets cannot set output_path')
    missing = sorted(k for k in secret_keys if not secrets.get(k))
    if missing:
        warnings.append(f'tool "{name}" disabled: secret "{missing[0]}" is not set')
        return False
    if secret_hosts is not None:
        unbound = sorted(k for k in secret_keys if not secret_hosts.get(k))
        if unbound:
            warnings.append(f'tool "{name}": secret "{unbound[0]}" has no allowed hosts; its calls fail until a workspace admin sets them')
    return True


def _secret_headers(template: dict[str, Any]) -> frozenset[str]:
    """Lower-case names of the headers whose template uses a secret."""
    headers = template.get("headers")
    return frozenset(str(k).lower() for k, v in (headers.items() if isinstance(headers, dict) else ()) if templates.secret_keys(v))


def secret_keys_used(manifest: Mapping[str, Any]) -> set[str]:
    """The secret keys the pack's composed tools reference (to skip reading allowed hosts when none)."""
    tools = manifest.get("tools") if isinstance(manifest, Mapping) else None
    custom = tools.get("custom") if isinstance(tools, Mapping) else None
    keys: set[str] = set()
    for item in custom if isinstance(custom, list) else []:
        implementation = item.get("implementation") if isinstance(item, Mapping) else None
        if isinstance(implementation, Mapping):
            keys |= templates.secret_keys(implementation.get("args"))
    return keys


def prune(
    tools: list[CustomTool],
    available_primitives: set[str],
    warnings: list[str] | None = None,
    known_primitives: set[str] | None = None,
) -> list[CustomTool]:
    """Step 5: iteratively drop composed tools whose delegate does not exist.

    The model never sees a dropped tool; it is not a run failure. With ``warnings``, says why each
    was dropped (``known_primitives``, every registered primitive, tells "no such primitive" from
    "not enabled by the tool policy"); validation warns about unknown delegates at publish too.
    """
    alive = {t.name: t for t in tools}
    known = known_primitives if known_primitives is not None else available_primitives
    changed = True
    while changed:
        changed = False
        for name, tool in list(alive.items()):
            if tool.delegate is not None and tool.delegate not in available_primitives and tool.delegate not in alive:
                del alive[name]
                changed = True
                if warnings is not None:
                    warnings.append(_pruned_reason(tool, tool.delegate, known, {t.name for t in tools}))
    return [t for t in tools if t.name in alive]


def _pruned_reason(tool: CustomTool, delegate: str, known_primitives: set[str], custom_names: set[str]) -> str:
    if delegate in custom_names:
        why = f'it delegates to tool "{delegate}", which is hidden'
    elif delegate in known_primitives:
        why = f'primitive "{delegate}" is not enabled by the tool policy'
    else:
        why = f'"{delegate}" is not a primitive of this installation'
    return f'tool "{tool.name}" hidden: {why}'


def check_chains(tools: list[CustomTool]) -> None:
    """Step 6: depth > 8 or a revisit is a registry error."""
    by_name = {t.name: t for t in tools}
    for tool in tools:
        seen = [tool.name]
        current = tool
        hops = 0
        while current.delegate is not None and current.delegate in by_name:
            hops += 1
            if hops > MAX_DEPTH:
                raise ToolsetError(f'tool "{tool.name}": delegation depth exceeds {MAX_DEPTH}')
            if current.delegate in seen:
                raise ToolsetError(f'tool "{tool.name}": delegation cycle through "{current.delegate}"')
            seen.append(current.delegate)
            current = by_name[current.delegate]


def resolve_args(tool: CustomTool, args: dict[str, Any], secrets: Mapping[str, str]) -> Any:
    resolved = templates.resolve(tool.args_template, args, tool.declared, secrets)
    if tool.secret_keys and isinstance(resolved, dict):
        return SecretArgs(resolved, keys=frozenset(tool.secret_keys), headers=tool.secret_headers, body=tool.secret_body)
    return resolved


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
