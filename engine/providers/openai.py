"""OpenAI-compatible chat completions with tools, streamed (spec runtime.md §7.2).

Serves the provider keys ``openai``, ``xai``, ``openrouter``, ``mistral`` and ``custom`` (any
OpenAI-compatible server behind ``base_url``). Uses the official SDK with its own retries
disabled (the loop retries) and environment proxies ignored.
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
from engine.types import JSON, Message, ModelRequest, ModelResponse, ToolCall, ToolDefinition, Usage

# OpenRouter's app attribution headers (optional; they name the caller on its dashboard).
_EXTRA_HEADERS: dict[str, dict[str, str]] = {"openrouter": {"X-Title": "AgentClash"}}


def wire_messages(messages: list[Message]) -> list[dict[str, JSON]]:
    wire: list[dict[str, JSON]] = []
    for message in messages:
        if message.role == "assistant":
            item: dict[str, JSON] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                item["tool_calls"] = [
                    {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments or "{}"}}
                    for call in message.tool_calls
                ]
            elif item["content"] is None:
                item["content"] = ""
            wire.append(item)
        elif message.role == "tool":
            # `is_error` has no place in this wire format and is dropped (§7.2).
            wire.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        else:
            wire.append({"role": message.role, "content": message.content})
    return wire


def wire_tools(tools: list[ToolDefinition]) -> list[dict[str, JSON]]:
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters or EMPTY_SCHEMA},
        }
        for tool in tools
    ]


@dataclasses.dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class OpenAIProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        self.provider_key = settings.provider_key
        self._secrets = (settings.api_key,)
        self._http_timeout = settings.http_timeout
        self._temperature = settings.deployment_config.get("temperature")
        self._client = openai.OpenAI(**sdk_client_options(settings), default_headers=_EXTRA_HEADERS.get(settings.provider_key))
        # Mistral rejects unknown request fields (422) and sends usage in its last chunk anyway.
        self._stream_options = settings.provider_key != "mistral"

    def complete(self, request: ModelRequest) -> ModelResponse:
        timeout = call_timeout(request, self._http_timeout)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": wire_messages(request.messages),
            "stream": True,
            "timeout": timeout,
        }
        if self._stream_options:
            kwargs["stream_options"] = {"include_usage": True}
        if request.tools:
            kwargs["tools"] = wire_tools(request.tools)
        if isinstance(self._temperature, (int, float)):
            kwargs["temperature"] = self._temperature
        try:
            stream = self._client.chat.completions.create(**kwargs)
            return self._read_stream(stream, request, CallClock(timeout))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a classified ProviderError
            raise map_sdk_error(exc, openai, secrets=self._secrets) from None

    def _read_stream(self, stream: Any, request: ModelRequest, clock: CallClock) -> ModelResponse:
        first_delta = FirstDelta(request, self.provider_key)
        model_id = request.model
        response_id = ""
        finish_reason = ""
        text_parts: list[str] = []
        calls: dict[int, _PartialCall] = {}
        usage = Usage()
        chunk_count = 0
        with stream:
            for chunk in stream:
                clock.check()
                chunk_count += 1
                model_id = getattr(chunk, "model", None) or model_id
                response_id = getattr(chunk, "id", None) or response_id
                if getattr(chunk, "usage", None):
                    usage = Usage(
                        chunk.usage.prompt_tokens or 0,
                        chunk.usage.completion_tokens or 0,
                        chunk.usage.total_tokens or (chunk.usage.prompt_tokens or 0) + (chunk.usage.completion_tokens or 0),
                    )
                for choice in (getattr(chunk, "choices", None) or [])[:1]:
                    finish_reason = choice.finish_reason or finish_reason
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        text_parts.append(delta.content)
                        first_delta.text(model_id, delta.content)
                    for position, fragment in enumerate(delta.tool_calls or []):
                        # Mistral sends whole calls without `index`; their position tells them apart.
                        index = fragment.index if fragment.index is not None else position
                        partial = calls.setdefault(index, _PartialCall())
                        function = fragment.function
                        name = (function.name or "") if function else ""
                        arguments = (function.arguments or "") if function else ""
                        partial.id += fragment.id or ""
                        partial.name += name
                        partial.arguments += arguments
                        first_delta.tool_call(model_id, index, fragment.id or "", name, arguments)
        if chunk_count == 0:
            raise errors.malformed("empty or non-streamed response body", secrets=self._secrets)
        tool_calls = [
            ToolCall(
                id=partial.id or f"call_{index}",
                name=partial.name,
                arguments=parse_tool_arguments(partial.name, partial.arguments, secrets=self._secrets),
            )
            for index, partial in sorted(calls.items())
        ]
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=model_id,
            finish_reason=finish_reason or ("tool_calls" if tool_calls else "stop"),
            output_text="".join(text_parts),
            tool_calls=tool_calls,
            usage=usage,
            raw_response={"id": response_id, "model": model_id, "finish_reason": finish_reason, "chunk_count": chunk_count},
        )
