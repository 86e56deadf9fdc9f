"""Sandboxes: ``create_sandbox(SandboxConfig.from_manifest(manifest), settings=SandboxSettings(...))``."""

from __future__ import annotations

from engine.sandbox import pool
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
from engine.sandbox.verification import VerificationSandbox, verification_sandbox


def create_sandbox(config: SandboxConfig, *, base_dir: str | None = None, settings: SandboxSettings | None = None) -> LocalSandbox:
    """A new sandbox for one case. With ``settings.warm_sandboxes`` > 0 it may be a pre-started,
    never-used one (``pool.py``); either way it is the caller's to ``destroy()``."""
    return pool.checkout(config, base_dir=base_dir, settings=settings)


def close_warm_sandboxes() -> None:
    """Destroy this process's idle pre-started sandboxes (worker shutdown; also run at exit)."""
    pool.POOL.close()


__all__ = [
    "FileTooLargeError",
    "IsolationUnavailableError",
    "LocalSandbox",
    "SandboxConfig",
    "SandboxConfigError",
    "SandboxSettings",
    "ShellNotAllowedError",
    "ToolRunError",
    "VerificationSandbox",
    "WorkspaceFullError",
    "WorkspacePathError",
    "close_warm_sandboxes",
    "contained_path",
    "create_sandbox",
    "read_limited",
    "reap_stale_sandboxes",
    "run_tool",
    "verification_sandbox",
]
