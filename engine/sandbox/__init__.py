"""Sandboxes: ``create_sandbox(SandboxConfig.from_manifest(manifest), settings=SandboxSettings(...))``."""

from __future__ import annotations

from engine.sandbox.base import (
    FileTooLargeError,
    IsolationUnavailableError,
    SandboxConfig,
    SandboxConfigError,
    SandboxSettings,
    ShellNotAllowedError,
    ToolRunError,
    WorkspaceFullError,
    WorkspacePathError,
)
from engine.sandbox.local import LocalSandbox, contained_path, read_limited, run_tool
from engine.sandbox.stale import reap_stale_sandboxes


def create_sandbox(config: SandboxConfig, *, base_dir: str | None = None, settings: SandboxSettings | None = None) -> LocalSandbox:
    return LocalSandbox(config, base_dir=base_dir, settings=settings)


__all__ = [
    "FileTooLargeError",
    "IsolationUnavailableError",
    "LocalSandbox",
    "SandboxConfig",
    "SandboxConfigError",
    "SandboxSettings",
    "ShellNotAllowedError",
    "ToolRunError",
    "WorkspaceFullError",
    "WorkspacePathError",
    "contained_path",
    "create_sandbox",
    "read_limited",
    "reap_stale_sandboxes",
    "run_tool",
]
