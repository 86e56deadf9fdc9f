"""What every provider adapter shares: settings, timeouts, SDK error mapping, first-delta hook.

Adapters implement :class:`engine.types.Provider` (``provider_key`` + ``complete(request)``).
They never retry (the loop does, :mod:`engine.providers.retry`) and raise only
:class:`engine.types.ProviderError`, whose message never contains the API key.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import httpx2

from engine.net.guard import Resolver
from engine.net.pinned import pinned_http_client, policy_refusal_in
from engine.providers import errors
from engine.types import JSON, ModelRequest, ModelResponse, ProviderError


@dataclasses.dataclass(slots=True)
class ProviderSettings:
    provider_key: str
    api_key: str | None = None
    base_url: str | None = None
    deployment_config: dict[str, JSON] = dataclasses.field(default_factory=dict)
    case_key: str = ""
    case_inputs: dict[str, JSON] = dataclasses.field(default_factory=dict)
    # Which trial of the case this is (0, 1, …: repeats of one case, not retry attempts); the
    # scripted provider's ``script_mix`` draws its script by it.
    trial: int = 0
    http_timeout: float = 60.0
    # The operator's ALLOW_PRIVATE_PROVIDER_URLS: may the base URL resolve to a private address?
    allow_private_urls: bool = False
    resolver: Resolver | None = None  # tests only: a fake DNS


EMPTY_SCHEMA: dict[str, JSON] = {"type": "object", "properties": {}}  # the parameters of a tool that takes none


def http_client(settings: ProviderSettings) -> httpx2.Client:
    """The SDK's HTTP client: every connection goes to the addresses checked once (engine/net/pinned.py)."""
    return pinned_http_client(allow_private=settings.allow_private_urls, resolver=settings.resolver, timeout=settings.http_timeout)


def sdk_client_options(settings: ProviderSettings) -> dict[str, Any]:
    """The keyword arguments of every vendor SDK client (``openai.OpenAI``, ``anthropic.Anthropic``):
    the SDK's own retries off (the loop retries), the pinned HTTP client, and a placeholder key for
    servers without auth (the SDKs refuse to build a client without one)."""
    return {
        "api_key": settings.api_key or "not-set",
        "base_url": settings.base_url,
        "max_retries": 0,
        "timeout": settings.http_timeout,
        "http_client": http_client(settings),
    }


def policy_error(exc: BaseException) -> ProviderError | None:
    """A base URL refused by the pinned transport: not retryable unless DNS simply failed."""
    refusal = policy_refusal_in(exc)
    if refusal is None:
        return None
    if refusal.reason == "dns_failed":
        return ProviderError(errors.UNAVAILABLE, str(refusal), retryable=True)
    return ProviderError(errors.INVALID_REQUEST, f"provider base URL refused by network policy: {refusal}")


class BrokenProvider:
    """Stands in for a provider that could not be built; every call raises the stored error.

    :func:`engine.providers.create_provider` returns one instead of raising, so configuration
    problems (unknown provider key, missing base URL) reach the run as a normal
    ``provider_error`` outcome with its events.
    """

    def __init__(self, provider_key: str, error: ProviderError) -> None:
        self.provider_key = provider_key
        self.error = error

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ProviderError(self.error.code, self.error.message, retryable=self.error.retryable)


def call_timeout(request: ModelRequest, http_timeout: float) -> float:
    """The per-call timeout: the step timeout, never more than the shared HTTP timeout."""
    step = request.step_timeout_seconds if request.step_timeout_seconds > 0 else http_timeout
    return max(0.001, min(step, http_timeout))


class CallClock:
    """Total-duration guard for a streamed call (per-read HTTP timeouts don't bound a trickle)."""

    def __init__(self, timeout: float) -> None:
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout

    def check(self) -> None:
        if time.monotonic() > self._deadline:
            raise ProviderError(errors.TIMEOUT, f"model call exceeded step timeout of {self._timeout:g}s", retryable=True)


class FirstDelta:
    """Forwards only the first meaningful streamed delta of a call to ``request.on_delta``."""

    def __init__(self, request: ModelRequest, provider_key: str) -> None:
        self._callback = request.on_delta
        self._provider_key = provider_key
        self._sent = False

    def text(self, model_id: str, text: str) -> None:
        if text:
            self._send(model_id, {"stream_kind": "text", "text_delta": text})

    def tool_call(self, model_id: str, index: int, id_: str, name: str, arguments: str) -> None:
        if id_ or name or arguments:
            fragment: dict[str, JSON] = {"index": index, "id_fragment": id_, "name_fragment": name, "arguments_fragment": arguments}
            self._send(model_id, {"stream_kind": "tool_call", "tool_call_fragment": fragment})

    def _send(self, model_id: str, body: dict[str, JSON]) -> None:
        if self._sent or self._callback is None:
            return
        self._sent = True
        self._callback({"provider_key": self._provider_key, "provider_model_id": model_id, **body})


def map_sdk_error(exc: BaseException, sdk: Any, *, secrets: tuple[str | None, ...]) -> ProviderError:
    """Classify an exception raised by the ``openai`` or ``anthropic`` SDK (same class names)."""
    if isinstance(exc, ProviderError):
        return exc
    if (refused := policy_error(exc)) is not None:
        return refused
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(errors.TIMEOUT, "model call timed out", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(errors.UNAVAILABLE, errors.redact(f"connection failed: {exc}", secrets), retryable=True)
    if isinstance(exc, sdk.APIResponseValidationError):
        return errors.malformed(f"response did not match the expected shape: {exc}", secrets=secrets)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status < 400:  # e.g. an `error` event inside a 200 stream
            return errors.classify_stream_error(exc.body, secrets=secrets)
        message = errors.error_message_from_body(exc.body)
        if not message:
            try:
                message = exc.response.text[:200]
            except Exception:  # noqa: BLE001 - a streamed body may be unreadable
                message = ""
        return errors.classify_status(status, message, headers=exc.response.headers, secrets=secrets)
    if isinstance(exc, sdk.APIError):  # error envelope inside a stream, no status
        return errors.classify_stream_error(exc.body, secrets=secrets)
    if isinstance(exc, (json.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError)):
        return errors.malformed(f"could not parse provider response: {exc}", secrets=secrets)
    return ProviderError(errors.UNKNOWN, errors.redact(f"{type(exc).__name__}: {exc}", secrets))


def parse_tool_arguments(name: str, arguments: str, *, secrets: tuple[str | None, ...]) -> str:
    """Validate streamed tool-call arguments; empty means ``{}``. Invalid JSON is malformed."""
    if not name:
        raise errors.malformed("tool call without a name", secrets=secrets)
    text = arguments.strip() or "{}"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise errors.malformed(f"tool call {name!r} has invalid JSON arguments: {exc}", secrets=secrets) from None
    return text
