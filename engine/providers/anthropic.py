"""Anthropic Messages API with tools, streamed (spec runtime.md §7.2), ``max_tokens`` 4096.

The system prompt is the last system message. Each tool result becomes a ``tool_result`` block
in a user message; consecutive messages of one role are merged so roles alternate.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anthropic

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

MAX_TOKENS = 4096
_STOP_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "max_tokens"}


def _tool_input(arguments: str) -> JSON:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def wire_messages(messages: list[Message]) -> tuple[str, list[dict[str, JSON]]]:
    system = ""
    wire: list[dict[str, JSON]] = []

    def append(role: str, blocks: list[JSON]) -> None:
        content = wire[-1]["content"] if wire and wire[-1]["role"] == role else None
        if isinstance(content, list):  # always, when the role repeats: this function made it
            content.extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "system":
            system = message.content
        elif message.role == "tool":
            append(
                "user",
                [{"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content, "is_error": message.is_error}],
            )
        elif message.role == "assistant":
            blocks: list[JSON] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call.arguments)} for call in message.tool_calls
            )
            # The API rejects empty content; a silent assistant turn still has to be recorded.
            append("assistant", blocks or [{"type": "text", "text": "(no output)"}])
        else:
            append("user", [{"type": "text", "text": message.content or "(empty)"}])
    return system, wire


def wire_tools(tools: list[ToolDefinition]) -> list[dict[str, JSON]]:
    return [{"name": tool.name, "description": tool.description, "input_schema": tool.parameters or EMPTY_SCHEMA} for tool in tools]


@dataclasses.dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    text: str = ""


class AnthropicProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        self.provider_key = settings.provider_key
        self._secrets = (settings.api_key,)
        self._http_timeout = settings.http_timeout
        self._client = anthropic.Anthropic(**sdk_client_options(settings))

    def complete(self, request: ModelRequest) -> ModelResponse:
        timeout = call_timeout(request, self._http_timeout)
        system, messages = wire_messages(request.messages)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": MAX_TOKENS,
            "messages": messages,
            "stream": True,
            "timeout": timeout,
        }
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = wire_tools(request.tools)
        try:
            stream = self._client.messages.create(**kwargs)
            return self._read_stream(stream, request, CallClock(timeout))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a classified ProviderError
            raise map_sdk_error(exc, anthropic, secrets=self._secrets) from None

    def _read_stream(self, stream: Any, request: ModelRequest, clock: CallClock) -> ModelResponse:
        first_delta = FirstDelta(request, self.provider_key)
        model_id = request.model
        message_id = ""
        stop_reason = ""
        input_tokens = output_tokens = 0
        blocks: dict[int, _Block] = {}
        event_count = 0
        with stream:
            for event in stream:
                clock.check()
                event_count += 1
                kind = getattr(event, "type", "")
                if kind == "message_start":
                    model_id = event.message.model or model_id
                    message_id = event.message.id or ""
                    input_tokens = getattr(event.message.usage, "input_tokens", 0) or 0
                    output_tokens = getattr(event.message.usage, "output_tokens", 0) or 0
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = _Block("tool_use", id=block.id or "", name=block.name or "")
                        first_delta.tool_call(model_id, event.index, block.id or "", block.name or "", "")
                    else:
                        blocks[event.index] = _Block(block.type, text=getattr(block, "text", "") or "")
                elif kind == "content_block_delta":
                    target = blocks.setdefault(event.index, _Block("text"))
                    delta = event.delta
                    if delta.type == "text_delta":
                        target.text += delta.text
                        first_delta.text(model_id, delta.text)
                    elif delta.type == "input_json_delta":
                        target.text += delta.partial_json
                        first_delta.tool_call(model_id, event.index, "", "", delta.partial_json)
                elif kind == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    if event.usage is not None and event.usage.output_tokens is not None:
                        output_tokens = event.usage.output_tokens
        if event_count == 0:
            raise errors.malformed("empty or non-streamed response body", secrets=self._secrets)
        text = "".join(b.text for _, b in sorted(blocks.items()) if b.kind == "text")
        tool_calls = [
            ToolCall(id=b.id or f"toolu_{index}", name=b.name, arguments=parse_tool_arguments(b.name, b.text, secrets=self._secrets))
            for index, b in sorted(blocks.items())
            if b.kind == "tool_use"
        ]
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=model_id,
            finish_reason=_STOP_REASONS.get(stop_reason, stop_reason or "stop"),
            output_text=text,
            tool_calls=tool_calls,
            usage=Usage(input_tokens, output_tokens, input_tokens + output_tokens),
            raw_response={"id": message_id, "model": model_id, "stop_reason": stop_reason, "event_count": event_count},
        )
