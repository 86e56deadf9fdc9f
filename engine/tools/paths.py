"""Agent-path helpers shared by primitives (the sandbox does the real, symlink-aware containment)."""

from __future__ import annotations

from engine.sandbox.base import WORKSPACE, WorkspacePathError
from engine.sandbox.fs import agent_components, agent_path


def outside_message(raw: str) -> str:
    return f'path "{raw}" is outside the sandbox workspace'


def clean(raw: str) -> str:
    """Lexically contained absolute agent path, or WorkspacePathError."""
    return agent_path(agent_components(raw))


__all__ = ["WORKSPACE", "WorkspacePathError", "clean", "outside_message"]
