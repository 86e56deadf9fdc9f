"""Where ``${secrets.*}`` may go: only into the args of a composed tool whose primitive is
``http_request`` (spec §5, "secret-safe primitives").

The reference checks this only when a run builds its tool registry, so a pack that passes a secret
to ``exec`` (or to another composed tool, or to a mock's echo template) publishes fine and every
case of every run then fails. We refuse it at publish with the engine's wording
(engine/tools/composed.py), naming where the secret would have gone: directly, or down a chain of
composed tools to its end (docs/pack-format-differences.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from bundle.validate.common import Report
from bundle.validate.composed_tools import MAX_DELEGATION_DEPTH, is_mock, iter_placeholders, placeholder_reference, string_leaves

SECRET_SAFE = "http_request"
_SECRETS = "secrets."


def secret_key_in(text: str) -> str | None:
    """The key of the first ``${secrets.KEY}`` (any encoding prefix) in ``text``, or None."""
    if "${" not in text:
        return None
    for inner, closed in iter_placeholders(text):
        ref = placeholder_reference(inner) if closed else ""
        if ref.startswith(_SECRETS) and ref[len(_SECRETS) :].strip():
            return ref[len(_SECRETS) :]
    return None


def first_secret(value: Any, path: str) -> tuple[str, str] | None:
    """``(path, key)`` of the first string leaf of ``value`` that references a secret."""
    for where, text in string_leaves(value, path):
        key = secret_key_in(text)
        if key is not None:
            return where, key
    return None


class SecretUse(NamedTuple):
    """A ``${secrets.KEY}`` an ``http_request`` tool sends: where it is written, and the tool's
    ``url`` (run creation checks the secret exists and may go to that host)."""

    tool: str
    path: str
    key: str
    url: Any


def secret_uses(bundle: dict[str, Any]) -> list[SecretUse]:
    """Every secret reference of the ``http_request`` tools (a bundle or a manifest: both keep ``tools.custom``);
    secrets anywhere else are publish errors (:func:`validate_tool_secrets`)."""
    uses: list[SecretUse] = []
    for i, tool in _tools(bundle):
        implementation = tool["implementation"]
        if is_mock(implementation) or _primitive(implementation) != SECRET_SAFE:
            continue
        args = implementation.get("args")
        for where, text in string_leaves(args, f"tools.custom[{i}].implementation.args"):
            for inner, closed in iter_placeholders(text) if "${" in text else ():
                ref = placeholder_reference(inner) if closed else ""
                if ref.startswith(_SECRETS) and ref[len(_SECRETS) :].strip():
                    url = args.get("url") if isinstance(args, dict) else None
                    uses.append(SecretUse(_name(tool) or f"#{i + 1}", where, ref[len(_SECRETS) :].strip(), url))
    return uses


def _tools(bundle: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    tools = bundle.get("tools")
    custom = tools.get("custom") if isinstance(tools, dict) else None
    if not isinstance(custom, list):
        return []
    return [(i, tool) for i, tool in enumerate(custom) if isinstance(tool, dict) and isinstance(tool.get("implementation"), dict)]


def _name(tool: dict[str, Any]) -> str:
    name = tool.get("name")
    return name.strip() if isinstance(name, str) else ""


def _primitive(implementation: dict[str, Any]) -> str:
    primitive = implementation.get("primitive")
    return primitive.strip() if isinstance(primitive, str) else ""


def _echo_template(implementation: dict[str, Any]) -> Any:
    """The template a mock fills from each call (engine/tools/mock.py), or None for other mocks."""
    strategy = implementation.get("strategy")
    strategy = strategy.strip().lower() if isinstance(strategy, str) else ""
    if strategy == "echo" or (not strategy and "template" in implementation and not {"lookup_key", "responses"} & set(implementation)):
        return implementation.get("template")
    return None


def validate_tool_secrets(bundle: dict[str, Any], report: Report) -> None:
    tools = _tools(bundle)
    graph: dict[str, str] = {}
    mocks: set[str] = set()
    for _, tool in tools:
        name, implementation = _name(tool), tool["implementation"]
        if is_mock(implementation):
            mocks.add(name)
        elif name and _primitive(implementation):
            graph.setdefault(name, _primitive(implementation))
    for i, tool in tools:
        implementation = tool["implementation"]
        name = _name(tool) or f"#{i + 1}"
        if is_mock(implementation):
            found = first_secret(_echo_template(implementation), f"tools.custom[{i}].implementation.template")
            if found is not None:
                report.add(
                    found[0],
                    f"${{secrets.{found[1]}}} may only be passed to the {SECRET_SAFE} primitive: mock tool "
                    f'"{name}" never receives secrets, so each call of it fails',
                )
            continue
        primitive = _primitive(implementation)
        if not primitive or primitive == SECRET_SAFE:
            continue
        found = first_secret(implementation.get("args"), f"tools.custom[{i}].implementation.args")
        if found is not None:
            report.add(
                found[0],
                f"${{secrets.{found[1]}}} may only be passed to the {SECRET_SAFE} primitive: "
                f'tool "{name}" passes it to {_route(name, primitive, graph, mocks)}',
            )


def _route(name: str, delegate: str, graph: dict[str, str], mocks: set[str]) -> str:
    """Where a secret that tool ``name`` hands to ``delegate`` ends up, in words."""
    if delegate == name:
        return "itself (a delegation cycle)"
    if delegate in mocks:
        return f'mock tool "{delegate}", which never receives secrets'
    if delegate not in graph:
        return f'"{delegate}"'
    chain = [name, delegate]
    current = graph[delegate]
    while current in graph and current not in chain and len(chain) <= MAX_DELEGATION_DEPTH:
        chain.append(current)
        current = graph[current]
    hops = " → ".join([*chain, current])
    if current in chain:
        return f'tool "{delegate}" ({hops}, a delegation cycle)'
    if current in graph:
        return f'tool "{delegate}" ({hops} …, more than {MAX_DELEGATION_DEPTH} tools deep)'
    if current == SECRET_SAFE:
        return f'tool "{delegate}" ({hops}): pass secrets to {SECRET_SAFE} directly, not through another tool'
    if current in mocks:
        return f'tool "{delegate}" ({hops}): mock tools never receive secrets'
    return f'tool "{delegate}" ({hops})'
