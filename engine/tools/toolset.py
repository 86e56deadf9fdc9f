"""``build_toolset``: the visible tool set for one lane/case, and call execution."""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from engine.events import TOOL_REGISTRY_WARNING
from engine.redact import Redactor
from engine.sandbox.base import SandboxConfig
from engine.scoring.security import SecurityPolicy
from engine.tools import policy, registry
from engine.tools.args import ArgumentError
from engine.tools.composed import CustomTool, ToolsetError, check_chains, dumps, parse_custom, prune, resolve_args
from engine.tools.context import ToolContext
from engine.tools.egress_watch import ContentInspector, EgressWatch, TaintTracker
from engine.tools.registry import Executor, PrimitiveSpec
from engine.tools.results import error, error_message
from engine.tools.templates import TemplateError
from engine.types import CancelCheck, EngineError, Event, EventSink, Sandbox, ToolCall, ToolDefinition, ToolResult

log = logging.getLogger(__name__)
MAX_DEPTH = 8


def _invalid_json(name: str) -> ToolResult:
    return error(f'tool "{name}" arguments must be valid JSON', "resolution")


def _not_available(name: str) -> ToolResult:
    return error(f'tool "{name}" is not available in this runtime', "delegation")


@dataclasses.dataclass(slots=True)
class _Primitive:
    spec: PrimitiveSpec
    run: Executor


class ToolSet:
    def __init__(
        self, ctx: ToolContext, primitives: dict[str, _Primitive], custom: dict[str, CustomTool], visible: set[str], warnings: list[str]
    ):
        self.ctx = ctx
        self._primitives = primitives  # every primitive available under the policy (delegation targets)
        self._custom = custom
        self.names: set[str] = set(visible)
        self.known: frozenset[str] = frozenset()  # every tool name that exists here, hidden or not (build_toolset)
        self.warnings: list[str] = warnings
        self.redactor = ctx.redactor
        self.taint = TaintTracker(None)  # which planted values the agent read (build_toolset sets it)
        defs = []
        for name in sorted(visible):
            if name in primitives:
                spec = primitives[name].spec
                defs.append(ToolDefinition(name, spec.description, spec.parameters))
            else:
                tool = custom[name]
                defs.append(ToolDefinition(name, tool.description, tool.parameters))
        self._definitions = defs

    def definitions(self) -> list[ToolDefinition]:
        return list(self._definitions)

    def category(self, name: str) -> str:
        if name in self._primitives:
            return self._primitives[name].spec.kind
        tool = self._custom.get(name)
        if tool is None:
            return "unknown"
        return "mock" if tool.mock is not None else "composed"

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one tool call. Never raises except EngineError (with a redacted message)."""
        try:
            if call.name not in self.names:
                result = _not_available(call.name)
            else:
                raw = (call.arguments or "").strip()
                if self.taint:
                    self.taint.note_call(call.name, raw)
                try:
                    args = json.loads(raw) if raw else {}
                except ValueError:
                    args = None
                result = self._dispatch(call.name, args, []) if isinstance(args, dict) else _invalid_json(call.name)
        except EngineError as exc:
            raise EngineError(self.redactor.text(str(exc))) from None
        result.tool_call_id = call.id
        if self.taint:
            self.taint.note_result(call.name, result.content)
        if self.redactor:
            result.content = self.redactor.text(result.content)
            if result.submitted_answer is not None:
                result.submitted_answer = self.redactor.text(result.submitted_answer)
        return result

    def _dispatch(self, name: str, args: dict[str, Any], chain: list[str]) -> ToolResult:
        if name in self._primitives:
            return self._run_primitive(name, args, chain)
        tool = self._custom.get(name)
        if tool is None:
            return _not_available(name)
        chain = chain + [name]
        if tool.mock is not None:
            result = tool.mock.run(args)
            result.resolved_tool_name = name
            result.resolved_tool_category = "mock"
            if len(chain) > 1:
                result.resolution_chain = chain
            return result
        delegate = tool.delegate or ""
        if len(chain) > MAX_DEPTH:
            return self._composed_failure(tool, chain, "delegation depth exceeded", "depth")
        if delegate in chain:
            return self._composed_failure(tool, chain, "delegation cycle detected", "cycle")
        if delegate not in self._primitives and delegate not in self._custom:
            return self._composed_failure(tool, chain, "tool is not available in this runtime", "delegation")
        try:
            resolved = resolve_args(tool, args, self.ctx.secrets)
        except TemplateError as exc:
            return self._composed_failure(tool, chain, str(exc), "resolution")
        if not isinstance(resolved, dict):
            return self._composed_failure(tool, chain, "arguments must be valid JSON", "resolution")
        result = self._dispatch(delegate, resolved, chain)
        if result.resolution_chain is None:
            result.resolution_chain = chain + [delegate]
        if result.resolved_tool_name is None:
            result.resolved_tool_name = delegate
            result.resolved_tool_category = self.category(delegate)
        if result.is_error:
            if result.failure_origin is None:
                result.failure_origin = "primitive"
            result.content = dumps({"error": f"{tool.name} failed: {error_message(result)}"})
        return result

    def _composed_failure(self, tool: CustomTool, chain: list[str], message: str, origin: str) -> ToolResult:
        result = error(f"{tool.name} failed: {message}", origin)
        result.resolution_chain = chain
        return result

    def _run_primitive(self, name: str, args: dict[str, Any], chain: list[str]) -> ToolResult:
        if self.ctx.cancel_check is not None and self.ctx.cancel_check():
            return error("run was cancelled", "policy")
        try:
            result = self._primitives[name].run(args)
        except ArgumentError:
            return _invalid_json(name)
        except EngineError:
            raise
        except Exception as exc:  # a bug or a broken sandbox: abort the lane, never leak details
            log.exception("primitive %s failed unexpectedly", name)
            raise EngineError(f"tool {name} failed unexpectedly: {type(exc).__name__}") from None
        if chain:
            result.resolved_tool_name = name
            result.resolved_tool_category = self._primitives[name].spec.kind
        return result


def build_toolset(
    manifest: dict[str, Any],
    *,
    sandbox: Sandbox | None,
    secrets: dict[str, str],
    deployment_config: dict[str, Any] | None = None,
    event_sink: EventSink | None = None,
    cancel_check: CancelCheck | None = None,
    run_id: str = "",
    lane_id: str = "",
    case_key: str = "",
    resolver: Any = None,
    secret_hosts: Mapping[str, Iterable[str]] | None = None,
) -> ToolSet:
    """Build the visible tool set (runtime.md §2.1). Raises ToolsetError for registry errors.

    ``secret_hosts``: each secret's allowed hosts (``engine.tools.secret_hosts`` patterns). A
    secret without any cannot be sent by a composed tool (docs/secrets.md).
    """
    manifest = manifest or {}
    secrets = {k: v for k, v in (secrets or {}).items() if isinstance(v, str)}
    hosts = {k: (v,) if isinstance(v, str) else tuple(str(p) for p in v) for k, v in (secret_hosts or {}).items() if v}
    redactor = Redactor(secrets.values())
    try:
        config = SandboxConfig.from_manifest(manifest, policy.sandbox_overrides(deployment_config))
    except EngineError as exc:
        raise ToolsetError(str(exc)) from None
    sandbox_config = getattr(sandbox, "config", None)
    if isinstance(sandbox_config, SandboxConfig):
        config = sandbox_config  # the sandbox is the source of truth for what it allows
    ctx = ToolContext(
        sandbox=sandbox, config=config, secrets=secrets, redactor=redactor, event_sink=event_sink,
        cancel_check=cancel_check, run_id=run_id, lane_id=lane_id, case_key=case_key,
        allowlist=config.egress_policy, resolver=resolver, secret_hosts=hosts,
    )  # fmt: skip
    specs = registry.load()
    available = policy.available_primitives(specs, config)
    primitives = {name: _Primitive(specs[name], specs[name].create(ctx)) for name in available}
    tools_block = manifest.get("tools") or {}
    if not isinstance(tools_block, dict):
        raise ToolsetError("tools must be an object")
    visible = policy.filter_primitives(available, tools_block)
    custom_list, warnings = parse_custom(tools_block.get("custom"), available, secrets, hosts)
    custom_list = prune(custom_list, available, warnings, known_primitives=set(specs))
    check_chains(custom_list)
    custom = {t.name: t for t in custom_list}
    visible |= set(custom)
    visible -= policy.deployment_denied(deployment_config)
    visible.add("submit")
    toolset = ToolSet(ctx, primitives, custom, visible, warnings)
    # A call to a name in ``known`` but not in ``names`` is a policy denial; any other unknown name
    # is the agent's mistake (a typo), not a denial (engine/loop.py).
    toolset.known = frozenset(specs) | frozenset(custom) | frozenset(_names_declared(tools_block)) | {"submit"}
    security = SecurityPolicy.from_manifest(manifest)
    toolset.taint = TaintTracker(security)
    if event_sink is not None:
        # Sandbox egress attempts and their content (engine/net/proxy.py) become sandbox.egress.*
        # events, and for a security pack the findings only egress shows (engine/tools/egress_watch.py).
        watch = EgressWatch(event_sink, security, taint=toolset.taint, lane_id=lane_id, case_key=case_key, redact=redactor.text)
        ctx.egress_hook = watch  # http_request's hops, redirects included
        if hasattr(sandbox, "egress_listener"):
            sandbox.egress_listener = watch  # type: ignore[union-attr]
        inspector = ContentInspector(security, secrets, hosts)
        if inspector and hasattr(sandbox, "egress_inspector"):
            sandbox.egress_inspector = inspector  # type: ignore[union-attr]
    for message in warnings:
        log.warning("%s", message)
        if event_sink is not None:
            event_sink(
                Event(
                    event_id=f"native:{lane_id}:tool.registry.warning:{uuid.uuid4().hex[:12]}",
                    event_type=TOOL_REGISTRY_WARNING,
                    source="native_engine",
                    occurred_at=datetime.datetime.now(datetime.UTC).isoformat(),
                    payload={"message": redactor.text(message)},
                    case_key=case_key,
                )
            )
    return toolset


def _names_declared(tools_block: dict[str, Any]) -> set[str]:
    """Tool names the pack's own tool block mentions (custom tools, allowed and denied lists)."""
    names: set[str] = set()
    custom = tools_block.get("custom")
    for tool in custom if isinstance(custom, list) else []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            names.add(tool["name"])
    for key in ("allowed", "denied"):
        listed = tools_block.get(key)
        names.update(name for name in (listed if isinstance(listed, list) else []) if isinstance(name, str))
    return names
