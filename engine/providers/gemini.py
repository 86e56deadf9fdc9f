"""Google Gemini (Gemini API, ``generativelanguage``) with tools, streamed, via the official
``google-genai`` SDK.

Tool definitions become function declarations (their JSON Schema passed as
``parameters_json_schema``); ``functionCall`` parts become :class:`ToolCall`s with their ``args``
as JSON text; ``usageMetadata`` becomes :class:`Usage` (thinking tokens count as output, as they
are billed). The system prompt is the last system message. Tool results go back as
``functionResponse`` parts in a user turn; consecutive turns of one role are merged so that the
answers to parallel calls arrive together. The SDK's own retries and automatic function calling
are off (the loop retries; the engine runs tools), and its HTTP client is the pinned transport.

Gemini's ``functionCall`` usually has no ``id``: the adapter then makes one up (``gemini_call_N``)
and never sends a made-up id back. Models that sign their calls (``thoughtSignature``) need the
signature returned with the call in the next turn; the adapter keeps them per call id for the
life of the provider (one case).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import httpx2
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from engine.providers import errors
from engine.providers.base import EMPTY_SCHEMA, CallClock, FirstDelta, ProviderSettings, call_timeout, http_client, policy_error
from engine.types import Message, ModelRequest, ModelResponse, ProviderError, ToolCall, ToolDefinition, Usage

API_VERSION = "v1beta"
_MADE_UP_ID = "gemini_call_"
_FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "max_tokens", "SAFETY": "content_filter", "PROHIBITED_CONTENT": "content_filter"}
_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def wire_tools(tools: list[ToolDefinition]) -> list[types.Tool]:
    if not tools:
        return []
    declarations = [
        types.FunctionDeclaration(name=tool.name, description=tool.description, parameters_json_schema=tool.parameters or EMPTY_SCHEMA)
        for tool in tools
    ]
    return [types.Tool(function_declarations=declarations)]


def wire_messages(messages: list[Message], signatures: dict[str, bytes] | None = None) -> tuple[str, list[types.Content]]:
    """(system instruction, contents). ``signatures`` maps a call id to its thought signature."""
    signatures = signatures or {}
    system = ""
    names: dict[str, str] = {}  # tool call id → function name (a functionResponse needs the name)
    contents: list[types.Content] = []

    def append(role: str, parts: list[types.Part]) -> None:
        if contents and contents[-1].role == role and contents[-1].parts is not None:
            contents[-1].parts.extend(parts)
        else:
            contents.append(types.Content(role=role, parts=parts))

    for message in messages:
        if message.role == "system":
            system = message.content
        elif message.role == "assistant":
            parts: list[types.Part] = [types.Part(text=message.content)] if message.content else []
            for call in message.tool_calls:
                names[call.id] = call.name
                function_call = types.FunctionCall(name=call.name, args=_arguments(call.arguments))
                if call.id and not call.id.startswith(_MADE_UP_ID):
                    function_call.id = call.id
                parts.append(types.Part(function_call=function_call, thought_signature=signatures.get(call.id)))
            append("model", parts or [types.Part(text="(no output)")])
        elif message.role == "tool":
            key = "error" if message.is_error else "output"
            response = types.FunctionResponse(name=names.get(message.tool_call_id, "tool"), response={key: message.content})
            if message.tool_call_id and not message.tool_call_id.startswith(_MADE_UP_ID):
                response.id = message.tool_call_id
            append("user", [types.Part(function_response=response)])
        else:
            append("user", [types.Part(text=message.content or "(empty)")])
    return system, contents


def gemini_usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if metadata is None:
        return Usage()
    prompt = metadata.prompt_token_count or 0
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(prompt, output, metadata.total_token_count or prompt + output)


def _retry_delay_from_details(body: Any) -> float | None:
    """Gemini's 429 body carries ``google.rpc.RetryInfo`` (``"retryDelay": "13s"``)."""
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and (match := _RETRY_DELAY.match(delay)):
            return float(match.group(1))
    return None


def _is_bad_key(exc: genai_errors.APIError) -> bool:
    # Gemini answers a wrong API key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    return "API_KEY_INVALID" in json.dumps(exc.details, default=str) or "API key not valid" in (exc.message or "")


def map_gemini_error(exc: BaseException, *, secrets: tuple[str | None, ...]) -> ProviderError:
    """Classify an exception from the google-genai SDK into :mod:`engine.providers.errors` codes."""
    if isinstance(exc, ProviderError):
        return exc
    if (refused := policy_error(exc)) is not None:
        return refused
    if isinstance(exc, genai_errors.APIError):
        status = int(exc.code or 0)
        if status == 400 and _is_bad_key(exc):
            return ProviderError(errors.AUTH, errors.redact(f"HTTP 400: {exc.message or 'API key not valid'}", secrets))
        response = exc.response if isinstance(exc.response, httpx2.Response) else None
        headers = response.headers if response is not None else None
        error = errors.classify_status(status or 500, exc.message or exc.status or "", headers=headers, secrets=secrets)
        if error.code == errors.RATE_LIMIT and error.retry_after is None:
            error.retry_after = _retry_delay_from_details(exc.details)
        return error
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderError(errors.TIMEOUT, "model call timed out", retryable=True)
    if isinstance(exc, httpx2.TransportError):
        return ProviderError(errors.UNAVAILABLE, errors.redact(f"connection failed: {type(exc).__name__}", secrets), retryable=True)
    if isinstance(exc, (pydantic.ValidationError, genai_errors.UnknownApiResponseError, json.JSONDecodeError, ValueError, TypeError)):
        return errors.malformed(f"could not parse provider response: {exc}", secrets=secrets)
    return ProviderError(errors.UNKNOWN, errors.redact(f"{type(exc).__name__}: {exc}", secrets))


@dataclasses.dataclass
class _Accumulated:
    model_id: str
    response_id: str = ""
    finish_reason: str = ""
    block_reason: str = ""
    text: list[str] = dataclasses.field(default_factory=list)
    calls: list[ToolCall] = dataclasses.field(default_factory=list)
    usage: Usage = dataclasses.field(default_factory=Usage)
    chunks: int = 0


class GeminiProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        self.provider_key = settings.provider_key
        self._secrets = (settings.api_key,)
        self._http_timeout = settings.http_timeout
        self._temperature = settings.deployment_config.get("temperature")
        self._signatures: dict[str, bytes] = {}
        self._client = genai.Client(
            api_key=settings.api_key or "not-set",
            http_options=types.HttpOptions(
                base_url=settings.base_url,
                api_version=API_VERSION,
                timeout=int(settings.http_timeout * 1000),
                httpx_client=http_client(settings),
                retry_options=None,
            ),
        )

    def _config(self, system: str, request: ModelRequest, timeout: float) -> types.GenerateContentConfig:
        config = types.GenerateContentConfig(
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            http_options=types.HttpOptions(timeout=max(1, int(timeout * 1000))),
        )
        if system:
            config.system_instruction = system
        if request.tools:
            config.tools = wire_tools(request.tools)  # type: ignore[assignment]
        if isinstance(self._temperature, (int, float)) and not isinstance(self._temperature, bool):
            config.temperature = float(self._temperature)
        return config

    def complete(self, request: ModelRequest) -> ModelResponse:
        timeout = call_timeout(request, self._http_timeout)
        system, contents = wire_messages(request.messages, self._signatures)
        try:
            stream = self._client.models.generate_content_stream(
                model=request.model,
                contents=contents,
                config=self._config(system, request, timeout),
            )
            return self._read_stream(stream, request, CallClock(timeout))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a classified ProviderError
            raise map_gemini_error(exc, secrets=self._secrets) from None

    def _read_chunk(self, chunk: types.GenerateContentResponse, acc: _Accumulated, first_delta: FirstDelta) -> None:
        acc.chunks += 1
        acc.model_id = chunk.model_version or acc.model_id
        acc.response_id = chunk.response_id or acc.response_id
        if chunk.usage_metadata is not None:
            acc.usage = gemini_usage(chunk.usage_metadata)
        if chunk.prompt_feedback is not None and chunk.prompt_feedback.block_reason is not None:
            acc.block_reason = str(chunk.prompt_feedback.block_reason.value)
        for candidate in (chunk.candidates or [])[:1]:
            if candidate.finish_reason is not None:
                acc.finish_reason = str(candidate.finish_reason.value)
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.function_call is not None:
                    self._read_call(part, acc, first_delta)
                elif part.text and not part.thought:
                    acc.text.append(part.text)
                    first_delta.text(acc.model_id, part.text)

    def _read_call(self, part: types.Part, acc: _Accumulated, first_delta: FirstDelta) -> None:
        call = part.function_call
        assert call is not None
        if not call.name:
            raise errors.malformed("function call without a name", secrets=self._secrets)
        index = len(acc.calls)
        call_id = call.id or f"{_MADE_UP_ID}{acc.response_id or 'r'}_{index}"
        arguments = json.dumps(call.args or {})
        if part.thought_signature:
            self._signatures[call_id] = part.thought_signature
        acc.calls.append(ToolCall(id=call_id, name=call.name, arguments=arguments))
        first_delta.tool_call(acc.model_id, index, call_id, call.name, arguments)

    def _read_stream(self, stream: Any, request: ModelRequest, clock: CallClock) -> ModelResponse:
        first_delta = FirstDelta(request, self.provider_key)
        acc = _Accumulated(model_id=request.model)
        for chunk in stream:
            clock.check()
            self._read_chunk(chunk, acc, first_delta)
        if acc.chunks == 0:
            raise errors.malformed("empty or non-streamed response body", secrets=self._secrets)
        if acc.block_reason and not acc.text and not acc.calls:
            finish = "content_filter"
        elif acc.calls:
            finish = "tool_calls"
        else:
            finish = _FINISH_REASONS.get(acc.finish_reason, (acc.finish_reason or "stop").lower())
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=acc.model_id,
            finish_reason=finish,
            output_text="".join(acc.text),
            tool_calls=acc.calls,
            usage=acc.usage,
            raw_response={
                "id": acc.response_id,
                "model": acc.model_id,
                "finish_reason": acc.finish_reason,
                "block_reason": acc.block_reason,
                "chunk_count": acc.chunks,
            },
        )
