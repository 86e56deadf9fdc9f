"""Mock tools (``implementation.type: mock``): static, lookup and echo strategies.

A static mock without a ``response`` is legal (publish-time validation skips mocks) and common in
real packs, whose authors expect the call to succeed: it answers a generic success naming the
tool and echoing the arguments, and validation warns about it (bundle/lint/tools.py).
"""

from __future__ import annotations

import json
from typing import Any

from engine.tools import templates
from engine.tools.results import error, ok
from engine.types import ToolResult


class MockConfigError(Exception):
    pass


class MockTool:
    def __init__(self, name: str, implementation: dict[str, Any], declared: set[str]):
        self.name = name
        self.declared = declared
        strategy = str(implementation.get("strategy") or "").strip().lower()
        if not strategy:
            if "lookup_key" in implementation or "responses" in implementation:
                strategy = "lookup"
            elif "template" in implementation:
                strategy = "echo"
            else:
                strategy = "static"
        self.strategy = strategy
        self.generic = False
        if strategy == "static":
            # No response: each call answers the generic mock result (a success; see generic_result).
            self.response = implementation.get("response")
            self.generic = "response" not in implementation
        elif strategy == "lookup":
            key = implementation.get("lookup_key")
            responses = implementation.get("responses")
            if not isinstance(key, str) or not key.strip() or not isinstance(responses, dict):
                raise MockConfigError(f'mock tool "{name}" needs lookup_key and a responses map')
            self.lookup_key, self.responses = key.strip(), responses
        elif strategy == "echo":
            template = implementation.get("template")
            if not isinstance(template, dict):
                raise MockConfigError(f'mock tool "{name}" needs a template object')
            self.template = template
        else:
            raise MockConfigError(f'mock tool "{name}" has unknown strategy "{strategy}"')

    def generic_result(self, args: dict[str, Any]) -> dict[str, Any]:
        """What a static mock without ``response`` answers (docs/pack-authoring.md, "Mock tools")."""
        return {"status": "ok", "mock": True, "tool": self.name, "arguments": args}

    def run(self, args: dict[str, Any]) -> ToolResult:
        if self.strategy == "static":
            response = self.generic_result(args) if self.generic else self.response
            return ok(json.dumps(response, ensure_ascii=False))
        if self.strategy == "lookup":
            value: Any = args
            for part in self.lookup_key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            if text in self.responses:
                return ok(json.dumps(self.responses[text], ensure_ascii=False))
            if "*" in self.responses:
                return ok(json.dumps(self.responses["*"], ensure_ascii=False))
            return error(f'no mock response for {self.lookup_key}="{text}" and no fallback defined')
        resolved = templates.resolve(self.template, args, set(args), {}, strict=False)
        return ok(json.dumps(resolved, ensure_ascii=False))
