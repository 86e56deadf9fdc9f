"""Sandboxes: ``create_sandbox(SandboxConfig.from_manifest(manifest))``."""

from __future__ import annotations

from engine.sandbox.base import (
    IsolationUnavailableError,
    SandboxConfig,
    SandboxConfigError,
    ShellNotAllowedError,
    WorkspaceFullError,
    WorkspacePathError,
)
from engine.sandbox.local import LocalSandbox


def create_sandbox(config: SandboxConfig, *, base_dir: str | None = None) -> LocalSandbox:
    return LocalSandbox(config, base_dir=base_dir)


__all__ = [
    "IsolationUnavailableError",
    "LocalSandbox",
    "SandboxConfig",
    "SandboxConfigError",
    "ShellNotAllowedError",
    "WorkspaceFullError",
    "WorkspacePathError",
    "create_sandbox",
]
