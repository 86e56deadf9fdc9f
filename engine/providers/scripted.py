"""A deterministic, offline provider for demos and tests (provider key ``scripted``).

``deployment_config["script"]`` = ``{"default": [STEP…], "cases": {"<case_key>": [STEP…]}}``
(the case's list wins over ``default``). A STEP is one of::

    {"tool": "read_file", "args": {"path": "/workspace/a.txt"}}   # one tool call
    {"tools": [{"tool": …, "args": {…}}, …]}                       # several calls in one turn
    {"submit": "the answer"}                                         # a `submit` call
    {"text": "thinking out loud"}                                    # a turn with no tool call

**Stochastic agents** (tests, benches and demos of trials, engine/scoring/stats.py): in place of
``script``, ``deployment_config["script_mix"]`` = ``[{"weight": 0.7, "script": {…}}, {"weight":
0.3, "script": {…}}]`` and an optional ``"seed": <int>`` (default 0). Each trial of a case plays one
of the scripts, drawn with probability weight / total weight by a generator seeded by ``(seed,
case key, trial index)``: the same trial always plays the same script (a redelivered case replays
it), and an agent whose scripts pass or fail has a known true pass rate. The trial index comes
with the provider's settings (``create_provider(…, trial=N)``, ``ProviderSettings.trial``, 0 by
default: a run without trials always plays the draw of trial 0); the drawn entry's index is in
``raw_response["scripted_mix_entry"]``.

Any step may also carry ``"reasoning": "summary text"``: the response then holds one reasoning
item with that summary (as the OpenAI Responses adapter reports them), so ``responses`` runs
record ``model.reasoning`` events offline.

Strings (recursively inside ``args``) may use ``{{input.KEY}}`` (the case input's value; a string
that is exactly one such placeholder keeps the value's JSON type), ``{{case_key}}`` and
``{{last_result}}`` (the content of the latest tool message). Unknown placeholders stay as text.

The provider is stateless: the step index is the number of assistant messages already in the
request, so a redelivered case replays the same script. When the script runs out it answers
with text and no tool call, so the loop's normal limits apply.

Requests without tools (``prompt_eval``, LLM judges, LLM user simulators) are answered by the
first of:

1. ``deployment_config["replies"]``: content-dependent answers, first match wins::

       {"about": ["text that identifies the prompt, e.g. a judge's rubric"],   # all of them
        "when": ["text the rest of the request must contain"],                # all of them
        "unless": ["text it must not contain"],                               # none of them
        "purpose": "judge",                                                   # or "user_simulator"
        "reply": "text" | {JSON}}                                             # objects are sent as JSON

   Every key but ``reply`` is optional (a rule with none is a catch-all). Each of ``about`` /
   ``when`` / ``unless`` is a string or a list of strings. The request text is every message's
   content joined by newlines, with runs of whitespace collapsed (the rule's strings too);
   matching is case-sensitive. The ``about`` strings are removed from the text before ``when``
   and ``unless`` are checked, so a marker that also appears in a rubric does not match the
   rubric. ``purpose`` compares with ``metadata["purpose"]`` of the request.
2. ``deployment_config["judge_responses"]`` (a string, or a list indexed like the script), for
   requests whose ``metadata["purpose"]`` is ``"judge"`` and any tool-less request the script
   has no step for;
3. the script: a ``text`` step is the answer and a ``submit`` step's answer is returned as text.

Usage is counted in words so cost metrics have data: input = words of every message,
output = words of the produced text and arguments. A message's count is kept by the provider
(the conversation only grows, so each turn counts only the messages added since the last one).

The provider is not streamed: it reports no ``model.output.delta`` (the ``model.call.completed``
event already holds the whole answer; a delta would only repeat it). ``deployment_config["stream"]:
true`` makes it report the first fragment of each answer through ``on_delta``, like a streaming
adapter (for demos and tests of the live view).

``deployment_config["latency_ms"]`` makes every call take that long, like a real model (provider
limit tests, demos of the live page); such a response's ``raw_response`` also records when the
call began and answered (``called_at``, ``answered_at``: Unix seconds). A latency longer than
the step timeout ends in a retryable ``timeout``, as a slow provider would.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time

from engine.providers import errors
from engine.providers.base import ProviderSettings
from engine.types import JSON, Message, ModelRequest, ModelResponse, ProviderError, ToolCall, Usage

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
_SPACE = re.compile(r"\s+")


def count_words(text: str) -> int:
    return len(text.split())


def _as_text(value: JSON) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def squash(text: str) -> str:
    """Whitespace runs collapsed to one space, ends trimmed: how ``replies`` compare text."""
    return _SPACE.sub(" ", text or "").strip()


def _object(value: JSON) -> dict[str, JSON]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _strings(value: JSON) -> list[str]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [text for text in (squash(str(item)) for item in items) if text]


def matching_reply(replies: JSON, request: ModelRequest) -> tuple[bool, JSON]:
    """The ``reply`` of the first rule in ``replies`` that matches the request, if any."""
    if not isinstance(replies, list):
        return False, None
    text = squash("\n".join(message.content for message in request.messages))
    purpose = request.metadata.get("purpose")
    for rule in replies:
        if not isinstance(rule, dict) or "reply" not in rule:
            continue
        if rule.get("purpose") not in (None, "", purpose):
            continue
        about = _strings(rule.get("about"))
        if not all(marker in text for marker in about):
            continue
        rest = text
        for marker in about:
            rest = rest.replace(marker, " ")
        if not all(needle in rest for needle in _strings(rule.get("when"))):
            continue
        if any(needle in rest for needle in _strings(rule.get("unless"))):
            continue
        return True, rule["reply"]
    return False, None


def drawn_script(config: dict[str, JSON], case_key: str, trial: int) -> tuple[dict[str, JSON], int | None]:
    """The script a trial plays, and its index in ``script_mix`` (None: ``script``, no mix)."""
    mix = config.get("script_mix")
    entries = [
        (index, float(weight), _object(entry.get("script")))
        for index, entry in enumerate(mix if isinstance(mix, list) else [])
        if isinstance(entry, dict)
        and isinstance(weight := entry.get("weight"), (int, float))
        and not isinstance(weight, bool)
        and 0 < weight < float("inf")
    ]
    if not entries:
        return _object(config.get("script")), None
    seed = config.get("seed")
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
    digest = hashlib.sha256(json.dumps([seed, case_key, trial]).encode()).digest()
    point = random.Random(int.from_bytes(digest[:8], "big")).random() * sum(weight for _, weight, _ in entries)
    for index, weight, script in entries:
        if point < weight:
            return script, index
        point -= weight
    return entries[-1][2], entries[-1][0]  # rounding left the point at the very top


class ScriptedProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        self.provider_key = settings.provider_key or "scripted"
        config = settings.deployment_config
        script, self._mix_entry = drawn_script(config, settings.case_key, settings.trial)
        cases = _object(script.get("cases"))
        steps = cases.get(settings.case_key) if settings.case_key in cases else script.get("default")
        self._steps: list[dict[str, JSON]] = [_object(step) for step in steps] if isinstance(steps, list) else []
        self._judge_responses = config.get("judge_responses")
        self._replies = config.get("replies")
        self._case_key = settings.case_key
        self._inputs = settings.case_inputs
        self._stream = config.get("stream") is True
        self._word_counts: dict[int, tuple[Message, str, int, int]] = {}  # id -> (message, content, calls, words)
        latency = config.get("latency_ms")
        self._latency = max(0.0, float(latency)) / 1000 if isinstance(latency, (int, float)) and not isinstance(latency, bool) else 0.0

    def complete(self, request: ModelRequest) -> ModelResponse:
        if not self._latency:
            return self._answer(request)
        called_at = time.time()
        if self._latency > request.step_timeout_seconds:
            time.sleep(max(0.0, request.step_timeout_seconds))
            raise ProviderError(errors.TIMEOUT, f"model call exceeded step timeout of {request.step_timeout_seconds:g}s", retryable=True)
        time.sleep(self._latency)
        response = self._answer(request)
        response.raw_response = {**_object(response.raw_response), "called_at": called_at, "answered_at": time.time()}
        return response

    def _answer(self, request: ModelRequest) -> ModelResponse:
        response = self._complete(request)
        index = sum(1 for message in request.messages if message.role == "assistant")
        step = self._steps[index] if index < len(self._steps) else None
        if step is not None and isinstance(step.get("reasoning"), str) and request.tools:
            summary = _as_text(self._render(step["reasoning"], self._context(request.messages)))
            response.reasoning = [{"item_id": f"rs_{index + 1}", "summary": [summary], "reasoning_tokens": count_words(summary)}]
        return response

    def _complete(self, request: ModelRequest) -> ModelResponse:
        index = sum(1 for message in request.messages if message.role == "assistant")
        step = self._steps[index] if index < len(self._steps) else None
        context = self._context(request.messages)
        if not request.tools:
            text = self._tool_less_answer(step, index, request, context)
            return self._response(request, text, [], index)
        if step is None:
            return self._response(request, "", [], index)
        if "text" in step:
            return self._response(request, self._render(step["text"], context), [], index)
        calls: list[tuple[str, JSON]]
        if "submit" in step:
            calls = [("submit", {"answer": self._render(step["submit"], context)})]
        elif "tools" in step:
            items = step["tools"] if isinstance(step["tools"], list) else []
            calls = [(str(item.get("tool", "")), item.get("args") or {}) for item in map(_object, items)]
        else:
            calls = [(str(step.get("tool", "")), step.get("args") or {})]
        tool_calls = [
            ToolCall(
                id=f"call_{index + 1}_{position + 1}",
                name=name,
                arguments=json.dumps(self._render(args, context)),
            )
            for position, (name, args) in enumerate(calls)
        ]
        return self._response(request, "", tool_calls, index)

    def _tool_less_answer(self, step: dict[str, JSON] | None, index: int, request: ModelRequest, context: dict[str, JSON]) -> str:
        found, reply = matching_reply(self._replies, request)
        if found:
            return _as_text(reply)
        is_judge = request.metadata.get("purpose") == "judge"
        if self._judge_responses is not None and (is_judge or step is None):
            responses = self._judge_responses
            if isinstance(responses, list):
                return str(responses[min(index, len(responses) - 1)]) if responses else ""
            return str(responses)
        if step is None:
            return ""
        if "text" in step:
            return _as_text(self._render(step["text"], context))
        if "submit" in step:
            return _as_text(self._render(step["submit"], context))
        return ""

    def _context(self, messages: list[Message]) -> dict[str, JSON]:
        last_result = next((m.content for m in reversed(messages) if m.role == "tool"), "")
        return {"case_key": self._case_key, "last_result": last_result}

    def _lookup(self, name: str, context: dict[str, JSON]) -> tuple[bool, JSON]:
        if name.startswith("input."):
            key = name[len("input.") :]
            return (key in self._inputs, self._inputs.get(key))
        return (name in context, context.get(name))

    def _render(self, value: JSON, context: dict[str, JSON]) -> JSON:
        if isinstance(value, dict):
            return {key: self._render(item, context) for key, item in value.items()}
        if isinstance(value, list):
            return [self._render(item, context) for item in value]
        if not isinstance(value, str):
            return value
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole:
            found, resolved = self._lookup(whole.group(1), context)
            if found:
                return resolved

        def substitute(match: re.Match[str]) -> str:
            found, resolved = self._lookup(match.group(1), context)
            return _as_text(resolved) if found else match.group(0)

        return _PLACEHOLDER.sub(substitute, value)

    def _message_words(self, message: Message) -> int:
        # Keyed by identity and holding the message (an id is never reused while it is held);
        # a message whose content or calls changed since is counted again.
        cached = self._word_counts.get(id(message))
        if cached is not None and cached[0] is message and cached[1] is message.content and cached[2] == len(message.tool_calls):
            return cached[3]
        words = count_words(message.content) + sum(count_words(c.arguments) for c in message.tool_calls)
        self._word_counts[id(message)] = (message, message.content, len(message.tool_calls), words)
        return words

    def _response(self, request: ModelRequest, text: JSON, tool_calls: list[ToolCall], index: int) -> ModelResponse:
        text = _as_text(text) if text is not None else ""
        input_tokens = sum(self._message_words(m) for m in request.messages)
        output_tokens = count_words(text) + sum(count_words(c.name) + count_words(c.arguments) for c in tool_calls)
        usage = Usage(input_tokens, output_tokens, input_tokens + output_tokens)
        if self._stream and request.on_delta is not None:
            fragment: dict[str, JSON]
            if tool_calls:
                first = tool_calls[0]
                fragment = {
                    "stream_kind": "tool_call",
                    "tool_call_fragment": {
                        "index": 0,
                        "id_fragment": first.id,
                        "name_fragment": first.name,
                        "arguments_fragment": first.arguments,
                    },
                }
            else:
                fragment = {"stream_kind": "text", "text_delta": text}
            if tool_calls or text:
                request.on_delta({"provider_key": self.provider_key, "provider_model_id": request.model or "scripted", **fragment})
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=request.model or "scripted",
            finish_reason="tool_calls" if tool_calls else "stop",
            output_text=text,
            tool_calls=tool_calls,
            usage=usage,
            raw_response={"scripted_step": index}
            if self._mix_entry is None
            else {"scripted_step": index, "scripted_mix_entry": self._mix_entry},
        )
