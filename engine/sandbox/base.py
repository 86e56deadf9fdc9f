"""Sandbox configuration and the errors every sandbox backend shares."""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Any, ClassVar

from engine.net.guard import EgressPolicy, parse_allow_entry
from engine.net.vault_mock import vault_env
from engine.types import EngineError

WORKSPACE = "/workspace"
DEFAULT_EXEC_TIMEOUT = 120.0
DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024 * 1024
DEFAULT_MAX_PROCESSES = 128
DEFAULT_FILE_SIZE_BYTES = 256 * 1024 * 1024
OUTPUT_CAP_BYTES = 4 * 1024 * 1024
DEFAULT_WORKSPACE_BYTES = 1024 * 1024 * 1024
DEFAULT_TMP_BYTES = 256 * 1024 * 1024
KNOWN_KINDS = ("file", "data", "network", "build", "browser", "terminal")
NETWORK_MODES = ("allowlist", "off")  # operator setting SANDBOX_NETWORK


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


class FileTooLargeError(OSError):
    """A workspace file over the size a caller is willing to read (checked before reading)."""

    def __init__(self, raw: str, size: int, limit: int) -> None:
        super().__init__(27, "file too large", raw)  # EFBIG
        self.size = size
        self.limit = limit


class ToolRunError(Exception):
    """A data tool that ran in the sandbox failed. ``code`` is machine-readable (``not_found``,
    ``outside``, ``timeout``…); ``message`` is safe to show."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code
        self.message = message


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


def _vault_secrets(manifest: dict[str, Any]) -> dict[str, str]:
    planted = (manifest.get("security") or {}).get("planted_secrets") or []
    return {
        str(p["name"]): str(p.get("value", ""))
        for p in planted
        if isinstance(p, dict) and p.get("location") == "infisical-mock" and p.get("name")
    }


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
    packages: tuple[str, ...] = ()  # sandbox.additional_packages (engine/sandbox/packages.py)
    # (host path, sandbox path) mounted read-only: the package layer, a template's paths. Set by the
    # worker after it builds them (runs/pipeline/native.py), never from the pack itself.
    read_only_binds: tuple[tuple[str, str], ...] = ()
    # security.planted_secrets with location infisical-mock (name -> value): the egress proxy answers
    # the mock vault's API with them (engine/net/vault_mock.py)
    vault_secrets: dict[str, str] = dataclasses.field(default_factory=dict)
    # Operator-only (settings, never the pack or runtime profile): see apply_operator_network.
    network_mode: str = "allowlist"
    private_allowlist: tuple[str, ...] = ()

    @property
    def egress_enabled(self) -> bool:
        """Whether the sandbox gets the egress proxy: the pack's network, or the mock vault alone."""
        return (self.allow_network and self.network_mode != "off") or bool(self.vault_secrets)

    def kind_allowed(self, kind: str) -> bool:
        return not self.allowed_tool_kinds or kind in self.allowed_tool_kinds

    @property
    def egress_policy(self) -> EgressPolicy:
        """The rule for ``http_request`` and the sandbox egress proxy."""
        return EgressPolicy.build(self.network_allowlist, self.private_allowlist)

    def apply_operator_network(self, mode: str = "allowlist", private_allowlist: tuple[str, ...] | list[str] = ()) -> None:
        """Operator settings (``SANDBOX_NETWORK``, ``SANDBOX_PRIVATE_ALLOWLIST``), passed in as plain
        values. ``off`` forbids agent network entirely, whatever the pack asks: no proxy for the
        sandbox and ``http_request`` is refused."""
        if mode not in NETWORK_MODES:
            raise SandboxConfigError(f"unknown sandbox network mode {mode!r}")
        cidrs = tuple(str(c).strip() for c in private_allowlist if str(c).strip())
        for cidr in cidrs:
            ipaddress.ip_network(cidr, strict=False)  # ValueError for a bad operator setting
        self.network_mode = mode
        self.private_allowlist = cidrs
        if mode == "off":
            self.allow_network = False

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
                parse_allow_entry(str(entry))  # CIDR or CIDR:port
            except ValueError as exc:
                raise SandboxConfigError(f'network_allowlist entry "{entry}" is not a valid CIDR') from exc
            allowlist.append(str(entry).strip())
        cfg.network_allowlist = tuple(allowlist)
        cfg.env_vars = _env_vars(manifest)
        version = manifest.get("version") or {}
        cfg.template_id = str(version.get("sandbox_template_id") or sandbox.get("sandbox_template_id") or "")
        cfg.vault_secrets = _vault_secrets(manifest)
        if cfg.vault_secrets:
            cfg.env_vars = {**vault_env(), **cfg.env_vars}
        cfg.packages = tuple(str(p) for p in sandbox.get("additional_packages") or () if isinstance(p, str) and p.strip())
        return cfg


def _apply_filesystem(cfg: SandboxConfig, source: dict[str, Any]) -> None:
    size = source.get("max_workspace_bytes")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        cfg.max_workspace_bytes = size
    wd = source.get("working_directory")
    if isinstance(wd, str) and wd.strip():
        cfg.working_directory = wd.strip()


@dataclasses.dataclass(frozen=True, slots=True)
class SandboxSettings:
    """Operator settings for every sandbox of a worker, passed in as plain values.

    The engine reads no environment variables: ``runs`` and the ``try_tool`` command build this
    from Django settings (``SANDBOX_*``) and hand it to :func:`engine.sandbox.create_sandbox`.
    """

    allow_unisolated: bool = False  # development only: run commands without bubblewrap
    cgroup_parent: str = "auto"  # "auto", "off", or a delegated cgroup-v2 directory
    workspace_tmpfs: bool = True  # a size-capped tmpfs per workspace when the worker may mount
    default_workspace_bytes: int = DEFAULT_WORKSPACE_BYTES  # when the pack sets no max_workspace_bytes
    tmp_bytes: int = DEFAULT_TMP_BYTES  # size of /tmp (and /dev/shm) inside the sandbox
    python: str = "/usr/bin/python3"  # the sandbox's interpreter for the data tools' zygote (zygote.py)
    warm_sandboxes: int = 0  # pre-started one-use sandboxes kept per worker process (engine/sandbox/pool.py)
    launcher: str = "native"  # PID 1: the native launcher (launcher.c), the only one; any other value is refused
    launcher_dir: str = ""  # where the native launcher is built and found (engine/sandbox/native.py); "" = none

    # Django setting name -> field, for from_settings()
    SETTING_NAMES: ClassVar[dict[str, str]] = {
        "SANDBOX_ALLOW_UNISOLATED": "allow_unisolated",
        "SANDBOX_CGROUP_PARENT": "cgroup_parent",
        "SANDBOX_WORKSPACE_TMPFS": "workspace_tmpfs",
        "SANDBOX_DEFAULT_WORKSPACE_BYTES": "default_workspace_bytes",
        "SANDBOX_TMP_BYTES": "tmp_bytes",
        "SANDBOX_PYTHON": "python",
        "SANDBOX_WARM_POOL": "warm_sandboxes",
        "SANDBOX_LAUNCHER": "launcher",
        "SANDBOX_LAUNCHER_DIR": "launcher_dir",
    }

    def __post_init__(self) -> None:
        if self.launcher != "native":  # the Python PID 1 was removed (docs/engine-safety.md "The native launcher")
            raise ValueError(f"SandboxSettings.launcher must be 'native' (the only sandbox PID 1), not {self.launcher!r}")

    @classmethod
    def from_settings(cls, source: Any) -> SandboxSettings:
        """Build from an object with ``SANDBOX_*`` attributes (``django.conf.settings``); missing ones keep
        their defaults. Values must already be typed (the settings module parses the environment)."""
        values = {field: getattr(source, name) for name, field in cls.SETTING_NAMES.items() if hasattr(source, name)}
        return cls(**values)
