"""What a primitive is bound to when the tool set is built."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from engine.net.guard import AnyAllowlist, EgressPolicy, Resolver
from engine.net.proxy import EgressAttempt
from engine.redact import Redactor
from engine.sandbox.base import SandboxConfig
from engine.types import CancelCheck, EventSink, Sandbox


@dataclasses.dataclass(slots=True)
class ToolContext:
    sandbox: Sandbox | None
    config: SandboxConfig
    secrets: dict[str, str]
    redactor: Redactor
    event_sink: EventSink | None = None
    cancel_check: CancelCheck | None = None
    run_id: str = ""
    lane_id: str = ""
    case_key: str = ""
    allowlist: AnyAllowlist = dataclasses.field(default_factory=EgressPolicy)  # SandboxConfig.egress_policy
    resolver: Resolver | None = None  # DNS override (tests); None = system resolver
    # Each secret's allowed hosts (canonical engine.tools.secret_hosts patterns); none = never sent.
    secret_hosts: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Told of every hop http_request's guard checks (build_toolset: the case's egress watch).
    egress_hook: Callable[[EgressAttempt], None] | None = None

    def kind_allowed(self, kind: str) -> bool:
        if kind == "always":
            return True
        if kind == "shell":
            return self.config.allow_shell
        return self.config.kind_allowed(kind)

    @property
    def network_allowed(self) -> bool:
        sandbox_ok = self.sandbox is None or bool(getattr(self.sandbox, "allow_network", False))
        return self.config.kind_allowed("network") and self.config.allow_network and sandbox_ok
