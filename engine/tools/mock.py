"""Mock tools (``implementation.type: mock``): static, lookup and echo strategies."""

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
        if strategy == "static":
            if "response" not in implementation:
                raise MockConfigError(f'mock tool "{name}" needs a response')
            self.response = implementation["response"]
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

    def run(self, args: dict[str, Any]) -> ToolResult:
        if self.strategy == "static":
            return ok(json.dumps(self.response, ensure_ascii=False))
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
