"""Engine tools: ``build_toolset(manifest, sandbox=…, secrets=…)`` and the primitive ``catalogue()``."""

from __future__ import annotations

from engine.tools.composed import ToolsetError
from engine.tools.registry import catalogue
from engine.tools.toolset import ToolSet, build_toolset

__all__ = ["ToolSet", "ToolsetError", "build_toolset", "catalogue"]
