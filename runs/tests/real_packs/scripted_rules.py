"""A scripted judge / user simulator that answers by what it is shown (test support only).

The ``scripted`` provider answers tool-less requests from a fixed list (``judge_responses``),
so one scripted judge deployment gives every lane of a run the same verdict. A judge that can
tell a good lane from a bad one has to read what it is judging, so the real-pack races use this
subclass: ``deployment_config["rules"]`` (first match wins) and ``"default_response"``::

    {"prompt_contains": ["<text that identifies the judge, e.g. its rubric>"],
     "context_contains": ["<text the evaluated output must contain>"],
     "context_lacks": ["<text it must not contain>"],
     "response": "<reply text, e.g. a judge JSON>"}

"Context" is the request text with the ``prompt_contains`` strings removed, so a marker that
also appears in the rubric does not match the rubric. Whitespace is collapsed on both sides.
Requests with tools, and configs without ``rules``, go to the plain scripted provider.

If the scripted provider ever grows content-conditioned replies, drop this module and the
fixture that installs it (runs/tests/test_real_packs.py).
"""

from __future__ import annotations

import re

from engine.providers.base import ProviderSettings
from engine.providers.scripted import ScriptedProvider
from engine.types import JSON, ModelRequest, ModelResponse

_SPACE = re.compile(r"\s+")


def squash(text: str) -> str:
    return _SPACE.sub(" ", text or "").strip()


def _strings(value: JSON) -> list[str]:
    if isinstance(value, str):
        return [squash(value)]
    return [squash(str(item)) for item in value or []]


class RuleScriptedProvider(ScriptedProvider):
    def __init__(self, settings: ProviderSettings) -> None:
        super().__init__(settings)
        config = settings.deployment_config
        self._rules = config.get("rules")
        self._default_response = config.get("default_response")

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.tools or not isinstance(self._rules, list):
            return super().complete(request)
        prompt = squash("\n".join(m.content for m in request.messages))
        for rule in self._rules:
            if not isinstance(rule, dict):
                continue
            markers = _strings(rule.get("prompt_contains"))
            if not all(marker in prompt for marker in markers):
                continue
            context = prompt
            for marker in markers:
                context = context.replace(marker, " ")
            if not all(needle in context for needle in _strings(rule.get("context_contains"))):
                continue
            if any(needle in context for needle in _strings(rule.get("context_lacks"))):
                continue
            return self._response(request, str(rule.get("response") or ""), [], 0)
        return self._response(request, str(self._default_response or ""), [], 0)
