"""Provider error classification shared by every adapter (spec runtime.md §7.3)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from engine.types import ProviderError

AUTH = "auth"
RATE_LIMIT = "rate_limit"
INVALID_REQUEST = "invalid_request"
TIMEOUT = "timeout"
UNAVAILABLE = "unavailable"
MALFORMED_RESPONSE = "malformed_response"
CREDENTIAL_UNAVAILABLE = "credential_unavailable"
UNSUPPORTED_PROVIDER = "unsupported_provider"
UNSUPPORTED_CAPABILITY = "unsupported_capability"
UNKNOWN = "unknown"

# Only these codes are retried inside the loop, and only when marked retryable (§3.3 step 5).
LOOP_RETRYABLE_CODES = frozenset({RATE_LIMIT, TIMEOUT, UNAVAILABLE})

_KEY_LIKE = re.compile(r"\b(sk|pk|key)-[A-Za-z0-9_\-*]{6,}")
_MAX_MESSAGE = 500


def redact(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """Remove credentials from a message: the given secret values and anything key-shaped."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    text = _KEY_LIKE.sub("[redacted]", text)
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "…"
    return text


def parse_retry_after(headers: Mapping[str, str] | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header.

    ``Retry-After`` is either delay-seconds or an HTTP date (RFC 9110 §10.2.3). A date is counted
    from the response's own ``Date`` header when it has one (so our clock's skew against the
    server's does not matter), else from ``now`` (default: the current UTC time); a date in the
    past means "retry now" (0). Unparseable values give ``None`` (the default back-off applies).
    How long a wait is actually taken is the caller's business (never past the run deadline).
    """
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw:
        try:
            seconds = float(raw)
        except ValueError:
            return _retry_after_date(raw, headers.get("date"), now)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    return None


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _retry_after_date(raw: str, server_date: str | None, now: datetime | None) -> float | None:
    when = _http_date(raw)
    if when is None:
        return None
    reference = _http_date(server_date) or now or datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())


def error_message_from_body(body: Any) -> str:
    """The vendor's human message from an error body (`{"error": {"message": …}}` and friends)."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            for key in ("message", "type", "code"):
                value = error.get(key)
                if isinstance(value, str) and value:
                    return value
        elif isinstance(error, str):
            return error
        message = body.get("message")
        if isinstance(message, str):
            return message
    if isinstance(body, str):
        return body
    return ""


def classify_status(
    status: int,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    secrets: tuple[str | None, ...] = (),
) -> ProviderError:
    """Map an HTTP error status to a :class:`ProviderError` (§7.3)."""
    text = redact(f"HTTP {status}: {message}".rstrip(": "), secrets)
    if status in (401, 403):
        return ProviderError(AUTH, text)
    if status == 429:
        return ProviderError(RATE_LIMIT, text, retryable=True, retry_after=parse_retry_after(headers))
    if status == 529:  # Anthropic "overloaded"
        return ProviderError(RATE_LIMIT, text, retryable=True, retry_after=parse_retry_after(headers))
    if status in (400, 422):
        return ProviderError(INVALID_REQUEST, text)
    if status in (502, 503, 504):
        return ProviderError(UNAVAILABLE, text, retryable=True, retry_after=parse_retry_after(headers))
    if status >= 500:
        return ProviderError(UNKNOWN, text, retryable=True)
    return ProviderError(UNKNOWN, text)


def classify_stream_error(body: Any, *, secrets: tuple[str | None, ...] = ()) -> ProviderError:
    """An error envelope received inside a 200 stream, classified by its ``type``/``code``."""
    error = body.get("error", body) if isinstance(body, Mapping) else body
    kind = ""
    if isinstance(error, Mapping):
        kind = f"{error.get('type') or ''} {error.get('code') or ''}".lower()
        code = error.get("code")
        if isinstance(code, int) and not isinstance(code, bool) and code >= 400:  # OpenRouter: {"code": 502, …}
            return classify_status(code, f"stream error: {error_message_from_body(body) or 'unknown'}", secrets=secrets)
    text = redact(f"stream error: {error_message_from_body(body) or 'unknown'}", secrets)
    if "overloaded" in kind or "rate_limit" in kind:
        return ProviderError(RATE_LIMIT, text, retryable=True)
    if "authentication" in kind or "permission" in kind:
        return ProviderError(AUTH, text)
    if "invalid_request" in kind:
        return ProviderError(INVALID_REQUEST, text)
    if "server_error" in kind or "api_error" in kind or "unavailable" in kind:
        return ProviderError(UNAVAILABLE, text, retryable=True)
    return ProviderError(UNKNOWN, text)


def malformed(message: str, *, secrets: tuple[str | None, ...] = ()) -> ProviderError:
    return ProviderError(MALFORMED_RESPONSE, redact(message, secrets))
