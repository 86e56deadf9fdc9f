"""Sandbox configuration and the errors every sandbox backend shares."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from typing import Any

from engine.types import EngineError

WORKSPACE = "/workspace"
DEFAULT_EXEC_TIMEOUT = 120.0
DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024 * 1024
DEFAULT_MAX_PROCESSES = 128
DEFAULT_FILE_SIZE_BYTES = 256 * 1024 * 1024
OUTPUT_CAP_BYTES = 4 * 1024 * 1024
KNOWN_KINDS = ("file", "data", "network", "build", "browser", "terminal")


class WorkspacePathError(ValueError):
    """An agent path that escapes (or cannot be safely resolved inside) the workspace."""

    def __init__(self, raw: str, message: str | None = None):
        self.raw = raw
        super().__init__(message or f'path "{raw}" is outside the sandbox workspace')


class ShellNotAllowedError(PermissionError):
    """The argv invokes a shell while the policy has ``allow_shell: false``."""

    def __init__(self) -> None:
        super().__init__("shell is not allowed in this runtime")


class IsolationUnavailableError(RuntimeError):
    def __init__(self) -> None:
        super().__init__("process isolation unavailable: install bubblewrap")


class WorkspaceFullError(OSError):
    def __init__(self) -> None:
        super().__init__("workspace size limit exceeded")


class SandboxConfigError(EngineError):
    """The pack/profile asks for a sandbox we refuse to build (message is safe to show)."""


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _allowed_kinds(raw: Any) -> frozenset[str]:
    if not isinstance(raw, list):
        return frozenset()
    return frozenset(k.strip().lower() for k in raw if isinstance(k, str) and k.strip())


def _env_vars(manifest: dict[str, Any]) -> dict[str, str]:
    sandbox = manifest.get("sandbox") or {}
    env: dict[str, str] = {}
    security = manifest.get("security") or {}
    for planted in security.get("planted_secrets") or []:
        if isinstance(planted, dict) and planted.get("location") == "env" and planted.get("name"):
            env[str(planted["name"])] = str(planted.get("value", ""))
    for key, value in (sandbox.get("env_vars") or {}).items():
        text = "" if value is None else str(value)
        if "${" in text:
            if "${secrets." in text.replace(" ", ""):
                raise SandboxConfigError("sandbox env_vars cannot carry secrets — use http_request headers instead")
            raise SandboxConfigError("sandbox env_vars must be literal strings")
        env[str(key)] = text
    return env


@dataclasses.dataclass(slots=True)
class SandboxConfig:
    """Everything a sandbox needs, resolved with the runtime.md §1.2 precedence."""

    allowed_tool_kinds: frozenset[str] = frozenset()  # empty = every kind
    allow_shell: bool = False
    allow_network: bool = False
    network_allowlist: tuple[str, ...] = ()
    env_vars: dict[str, str] = dataclasses.field(default_factory=dict)
    max_workspace_bytes: int | None = None
    working_directory: str = WORKSPACE
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    max_processes: int = DEFAULT_MAX_PROCESSES
    file_size_bytes: int = DEFAULT_FILE_SIZE_BYTES
    max_tool_calls: int | None = None
    template_id: str = ""

    def kind_allowed(self, kind: str) -> bool:
        return not self.allowed_tool_kinds or kind in self.allowed_tool_kinds

    @property
    def allowlist_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        return [ipaddress.ip_network(entry, strict=False) for entry in self.network_allowlist]

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any], overrides: dict[str, Any] | None = None) -> SandboxConfig:
        """Build the config from a manifest and optional runtime-profile sandbox overrides.

        ``overrides`` is ``runtime_profile.profile_config.sandbox`` (allow_shell, allow_network,
        working_directory, max_workspace_bytes) plus our operator knobs (exec_timeout,
        memory_bytes, max_processes, file_size_bytes).
        """
        manifest = manifest or {}
        policy = manifest.get("tool_policy") or {}
        filesystem = manifest.get("filesystem") or {}
        sandbox = manifest.get("sandbox") or {}
        cfg = cls(allowed_tool_kinds=_allowed_kinds(policy.get("allowed_tool_kinds")))
        cfg.allow_shell = _bool(policy.get("allow_shell")) or False
        cfg.allow_network = _bool(policy.get("allow_network")) or False
        if isinstance(policy.get("max_tool_calls"), int):
            cfg.max_tool_calls = policy["max_tool_calls"]
        _apply_filesystem(cfg, filesystem)
        overrides = overrides or {}
        for key in ("allow_shell", "allow_network"):
            if isinstance(overrides.get(key), bool):
                setattr(cfg, key, overrides[key])
        _apply_filesystem(cfg, overrides)
        for key in ("exec_timeout", "memory_bytes", "max_processes", "file_size_bytes"):
            if isinstance(overrides.get(key), (int, float)) and not isinstance(overrides.get(key), bool):
                setattr(cfg, key, type(getattr(cfg, key))(overrides[key]))
        if sandbox.get("network_access") is True:
            cfg.allow_network = True
        allowlist = []
        for entry in sandbox.get("network_allowlist") or []:
            try:
                ipaddress.ip_network(str(entry).strip(), strict=False)
            except ValueError as exc:
                raise SandboxConfigError(f'network_allowlist entry "{entry}" is not a valid CIDR') from exc
            allowlist.append(str(entry).strip())
        cfg.network_allowlist = tuple(allowlist)
        cfg.env_vars = _env_vars(manifest)
        version = manifest.get("version") or {}
        cfg.template_id = str(version.get("sandbox_template_id") or sandbox.get("sandbox_template_id") or "")
        return cfg


def _apply_filesystem(cfg: SandboxConfig, source: dict[str, Any]) -> None:
    size = source.get("max_workspace_bytes")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        cfg.max_workspace_bytes = size
    wd = source.get("working_directory")
    if isinstance(wd, str) and wd.strip():
        cfg.working_directory = wd.strip()


def unisolated_allowed() -> bool:
    return os.environ.get("SANDBOX_ALLOW_UNISOLATED", "") == "1"
