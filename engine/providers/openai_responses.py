"""The OpenAI Responses API (``POST {base}/responses``) with function tools, for ``responses`` packs.

Serves the provider keys in :data:`engine.providers.registry.RESPONSES_PROVIDER_KEYS` that speak
this wire format (``openai``, and ``custom`` servers behind ``base_url``). The agent loop stays the
native one; only the wire differs from :mod:`engine.providers.openai`:

- the history goes out as ``input`` items: messages, ``function_call`` items for the assistant's
  tool calls and ``function_call_output`` items for tool results (no item ids, ``store: false``,
  so every call is self-contained and nothing is kept at the vendor);
- tools are Responses function tools (``{"type": "function", "name", "description", "parameters"}``);
- ``function_call`` output items become the engine's tool calls; ``reasoning`` output items are
  returned as :class:`engine.types.ModelResponse` ``reasoning`` entries holding their *summary*
  text only (never ``encrypted_content`` or raw reasoning content);
- usage maps ``input_tokens``/``output_tokens``/``total_tokens`` to the engine's usage (OpenAI counts
  reasoning tokens inside ``output_tokens``); the reasoning and cached token counts are kept in
  ``raw_response["usage"]``.

Streaming (SSE events) is the default; ``deployment_config["stream"] = false`` asks for one JSON
response instead. ``deployment_config`` may also set ``temperature``, ``max_output_tokens``,
``reasoning_effort`` and ``reasoning_summary`` (``reasoning`` is sent only when one of the last two
is set, since non-reasoning models refuse it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import openai

from engine.providers import errors
from engine.providers.base import (
    EMPTY_SCHEMA,
    CallClock,
    FirstDelta,
    ProviderSettings,
    call_timeout,
    map_sdk_error,
    parse_tool_arguments,
    sdk_client_options,
)
from engine.types import JSON, Message, ModelRequest, ModelResponse, ProviderError, ToolCall, ToolDefinition, Usage

_TERMINAL_EVENTS = ("response.completed", "response.incomplete")
_FINISH_BY_INCOMPLETE_REASON = {"max_output_tokens": "max_tokens", "content_filter": "content_filter"}


def wire_input(messages: list[Message]) -> list[dict[str, JSON]]:
    """The history as Responses ``input`` items."""
    items: list[dict[str, JSON]] = []
    for message in messages:
        if message.role == "assistant":
            if message.content:
                items.append({"type": "message", "role": "assistant", "content": message.content})
            items.extend(
                {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments or "{}"}
                for call in message.tool_calls
            )
        elif message.role == "tool":
            items.append({"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content})
        else:
            items.append({"type": "message", "role": message.role, "content": message.content})
    return items


def wire_tools(tools: list[ToolDefinition]) -> list[dict[str, JSON]]:
    return [
        {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters or EMPTY_SCHEMA}
        for tool in tools
    ]


def as_dict(value: Any) -> dict[str, JSON]:
    """An SDK model (or plain mapping) as a dict of the fields the server actually sent."""
    if isinstance(value, dict):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        result = to_dict()
        return result if isinstance(result, dict) else {}
    return {}


def _int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _mapping(value: JSON) -> dict[str, JSON]:
    return value if isinstance(value, dict) else {}


def usage_of(response: dict[str, JSON]) -> tuple[Usage, dict[str, int]]:
    """Engine usage and the detail counts (reasoning, cached) of a Responses ``usage`` object."""
    raw = _mapping(response.get("usage"))
    input_tokens, output_tokens = _int(raw.get("input_tokens")), _int(raw.get("output_tokens"))
    total = _int(raw.get("total_tokens")) or input_tokens + output_tokens
    output_details, input_details = _mapping(raw.get("output_tokens_details")), _mapping(raw.get("input_tokens_details"))
    details = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": total,
        "reasoning_tokens": _int(output_details.get("reasoning_tokens")),
        "cached_tokens": _int(input_details.get("cached_tokens")),
    }
    return Usage(input_tokens, output_tokens, total), details


def reasoning_entry(item: dict[str, JSON]) -> dict[str, JSON]:
    """What the engine records of a ``reasoning`` item: its id and summary texts, nothing hidden."""
    summary = item.get("summary")
    summary = summary if isinstance(summary, list) else []
    texts: list[JSON] = [str(part.get("text") or "") for part in summary if isinstance(part, dict) and part.get("text")]
    return {"item_id": str(item.get("id") or ""), "summary": texts}


@dataclasses.dataclass
class _Output:
    """The parts of a response the engine uses, from its ``output`` items."""

    text: list[str] = dataclasses.field(default_factory=list)
    calls: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (call_id, name, arguments)
    reasoning: list[dict[str, JSON]] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, items: list[JSON]) -> _Output:
        out = cls()
        for item in items:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind == "message":
                content = item.get("content")
                for part in content if isinstance(content, list) else []:
                    if isinstance(part, dict) and part.get("type") == "output_text":
                        out.text.append(str(part.get("text") or ""))
            elif kind == "function_call":
                call_id = str(item.get("call_id") or item.get("id") or "")
                out.calls.append((call_id, str(item.get("name") or ""), str(item.get("arguments") or "")))
            elif kind == "reasoning":
                out.reasoning.append(reasoning_entry(item))
        return out


class _StreamState:
    """Output items as the stream builds them, keyed by ``output_index``."""

    def __init__(self) -> None:
        self.items: dict[int, dict[str, JSON]] = {}
        self.final: dict[str, JSON] | None = None
        self.event_count = 0

    def apply(self, event: dict[str, JSON]) -> tuple[str, str | tuple[int, dict[str, JSON]] | None]:
        """Fold one SSE event in; returns (what kind of delta it carried, the delta) for the first-delta hook:
        ("text", text), ("tool_call", (output index, item)) or ("", None)."""
        kind = str(event.get("type") or "")
        index = _int(event.get("output_index"))
        added, response = event.get("item"), event.get("response")
        if kind in ("response.output_item.added", "response.output_item.done") and isinstance(added, dict):
            self.items[index] = dict(added)
            item = self.items[index]
            if kind.endswith(".added") and item.get("type") == "function_call":
                return "tool_call", (index, item)
        elif kind == "response.function_call_arguments.delta":
            item = self.items.setdefault(index, {"type": "function_call", "id": event.get("item_id")})
            item["arguments"] = str(item.get("arguments") or "") + str(event.get("delta") or "")
            return "tool_call", (index, {**item, "arguments": str(event.get("delta") or "")})
        elif kind == "response.output_text.delta":
            return "text", str(event.get("delta") or "")
        elif kind in _TERMINAL_EVENTS and isinstance(response, dict):
            self.final = response
        return "", None

    def response(self) -> dict[str, JSON]:
        final = dict(self.final or {})
        # A server that streams the items but sends a terminal event without them (some
        # compatible servers do) still gets its output read.
        if not final.get("output") and self.items:
            final["output"] = [self.items[index] for index in sorted(self.items)]
        return final


class OpenAIResponsesProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        self.provider_key = settings.provider_key
        self._secrets = (settings.api_key,)
        self._http_timeout = settings.http_timeout
        self._config = dict(settings.deployment_config)
        self._stream = self._config.get("stream") is not False
        self._client = openai.OpenAI(**sdk_client_options(settings))

    def _kwargs(self, request: ModelRequest, timeout: float) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "input": wire_input(request.messages),
            "store": False,
            "stream": self._stream,
            "timeout": timeout,
        }
        if request.tools:
            kwargs["tools"] = wire_tools(request.tools)
        temperature = self._config.get("temperature")
        if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
            kwargs["temperature"] = temperature
        max_output = self._config.get("max_output_tokens")
        if isinstance(max_output, int) and not isinstance(max_output, bool) and max_output > 0:
            kwargs["max_output_tokens"] = max_output
        effort, summary = self._config.get("reasoning_effort"), self._config.get("reasoning_summary")
        if isinstance(effort, str) or isinstance(summary, str):
            reasoning: dict[str, JSON] = {"summary": summary if isinstance(summary, str) else "auto"}
            if isinstance(effort, str):
                reasoning["effort"] = effort
            kwargs["reasoning"] = reasoning
        return kwargs

    def complete(self, request: ModelRequest) -> ModelResponse:
        timeout = call_timeout(request, self._http_timeout)
        try:
            result = self._client.responses.create(**self._kwargs(request, timeout))
            if self._stream:
                return self._read_stream(result, request, CallClock(timeout))
            return self._response(as_dict(result), request, event_count=0)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a classified ProviderError
            raise map_sdk_error(exc, openai, secrets=self._secrets) from None

    def _read_stream(self, stream: Any, request: ModelRequest, clock: CallClock) -> ModelResponse:
        first_delta = FirstDelta(request, self.provider_key)
        state = _StreamState()
        with stream:
            for raw in stream:
                clock.check()
                event = as_dict(raw)
                state.event_count += 1
                if event.get("type") == "error":
                    raise errors.classify_stream_error({"error": event}, secrets=self._secrets)
                kind, delta = state.apply(event)
                if kind == "text":
                    first_delta.text(request.model, str(delta))
                elif kind == "tool_call" and isinstance(delta, tuple):
                    index, item = delta
                    first_delta.tool_call(
                        request.model, index, str(item.get("call_id") or ""), str(item.get("name") or ""), str(item.get("arguments") or "")
                    )
                if event.get("type") == "response.failed":
                    raise self._failed(event.get("response"))
        if state.event_count == 0:
            raise errors.malformed("empty or non-streamed response body", secrets=self._secrets)
        if state.final is None:
            raise errors.malformed("the stream ended without response.completed", secrets=self._secrets)
        return self._response(state.response(), request, event_count=state.event_count)

    def _failed(self, response: JSON) -> ProviderError:
        error = (response or {}).get("error") if isinstance(response, dict) else None
        error = error if isinstance(error, dict) else {"message": "the response failed"}
        # Responses error codes (server_error, rate_limit_exceeded, invalid_prompt…) classify by name.
        return errors.classify_stream_error({"error": {"type": error.get("code") or "", **error}}, secrets=self._secrets)

    def _response(self, response: dict[str, JSON], request: ModelRequest, *, event_count: int) -> ModelResponse:
        status = str(response.get("status") or "completed")
        if status == "failed":
            raise self._failed(response)
        output = response.get("output")
        if not isinstance(output, list):
            raise errors.malformed("response without an output list", secrets=self._secrets)
        out = _Output.of(output)
        tool_calls = [
            ToolCall(
                id=call_id or f"call_{position}",
                name=name,
                arguments=parse_tool_arguments(name, arguments, secrets=self._secrets),
            )
            for position, (call_id, name, arguments) in enumerate(out.calls)
        ]
        usage, details = usage_of(response)
        if out.reasoning:
            out.reasoning[0]["reasoning_tokens"] = details["reasoning_tokens"]  # the call's, counted once
        model_id = str(response.get("model") or request.model)
        incomplete = _mapping(response.get("incomplete_details"))
        if status == "incomplete":
            finish_reason = _FINISH_BY_INCOMPLETE_REASON.get(str(incomplete.get("reason") or ""), "incomplete")
        else:
            finish_reason = "tool_calls" if tool_calls else "stop"
        raw: dict[str, JSON] = {"id": response.get("id") or "", "model": model_id, "status": status, "usage": {**details}}
        if event_count:
            raw["event_count"] = event_count
        if incomplete:
            raw["incomplete_reason"] = incomplete.get("reason")
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=model_id,
            finish_reason=finish_reason,
            output_text="".join(out.text),
            tool_calls=tool_calls,
            usage=usage,
            raw_response=raw,
            reasoning=out.reasoning,
        )
