""" "Test connection" for provider accounts: list the provider's models through the network guard.

One :class:`ModelList` per provider key says where the list is and how to read it:

- openai, xai, mistral, openrouter, custom (OpenAI-compatible): ``GET {base}/models`` with
  ``Authorization: Bearer``; ids from ``data[].id``.
- anthropic: ``GET {base}/v1/models`` with ``x-api-key`` and ``anthropic-version``.
- gemini: ``GET {base}/v1beta/models`` with ``x-goog-api-key``; ids from ``models[].name`` without
  the ``models/`` prefix, only models that can ``generateContent``.

Default base URLs come from the engine's provider registry (one home for them). The base URL is
checked (§7.4) and the request is pinned to the checked addresses, sent without proxies and
without following redirects. Messages are short, never contain the key (they go through the
redactor too) and never contain resolved addresses.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
from collections.abc import Callable
from typing import Any

from engine.net.guard import NetworkPolicyError, Response, send
from engine.providers.registry import default_base_url
from engine.redact import Redactor
from infrastructure.base_url import BaseUrlError, Resolver, base_url_check

TIMEOUT_SECONDS = 10.0
ANY_ADDRESS = ("0.0.0.0/0", "::/0")


def _openai_ids(data: Any) -> list[str]:
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [str(item["id"]) for item in items if isinstance(item, dict) and item.get("id")]


def _gemini_ids(data: Any) -> list[str]:
    items = data.get("models") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    ids = []
    for item in items:
        if not isinstance(item, dict) or not item.get("name"):
            continue
        methods = item.get("supportedGenerationMethods")
        if isinstance(methods, list) and "generateContent" not in methods:
            continue  # embedding-only and similar models cannot play a lane
        ids.append(str(item["name"]).removeprefix("models/"))
    return ids


def _bearer(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"}


@dataclasses.dataclass(frozen=True)
class ModelList:
    path: str
    auth_headers: Callable[[str], dict[str, str]] = _bearer
    fixed_headers: tuple[tuple[str, str], ...] = ()
    read_ids: Callable[[Any], list[str]] = _openai_ids


_OPENAI_COMPATIBLE = ModelList("/models")
MODEL_LISTS: dict[str, ModelList] = {
    "openai": _OPENAI_COMPATIBLE,
    "xai": _OPENAI_COMPATIBLE,
    "mistral": _OPENAI_COMPATIBLE,
    "openrouter": _OPENAI_COMPATIBLE,
    "custom": _OPENAI_COMPATIBLE,
    "anthropic": ModelList("/v1/models", lambda key: {"x-api-key": key}, (("anthropic-version", "2023-06-01"),)),
    "gemini": ModelList("/v1beta/models", lambda key: {"x-goog-api-key": key}, read_ids=_gemini_ids),
}


@dataclasses.dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    message: str
    models: tuple[str, ...] = ()


def _model_ids(body: bytes, spec: ModelList) -> list[str]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return []
    return spec.read_ids(data)


def _refused_key(provider_key: str, status: int, body: bytes) -> bool:
    if status in (401, 403):
        return True
    # Gemini answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    return provider_key == "gemini" and status == 400 and b"API_KEY_INVALID" in body


def _error_result(provider_key: str, response: Response) -> ConnectionResult:
    status = response.status_code
    if _refused_key(provider_key, status, response.body):
        return ConnectionResult(False, f"The provider refused the credential (HTTP {status}). Check the API key secret.")
    if status == 404:
        return ConnectionResult(
            False,
            "The provider has no model list at this base URL (HTTP 404). Check the base URL (OpenAI-compatible servers usually end in /v1).",
        )
    if status == 429:
        wait = response.headers.get("retry-after") or response.headers.get("Retry-After")
        later = f" Try again in {wait} s." if wait and wait.isdigit() else " Try again later."
        return ConnectionResult(False, f"The provider is rate limiting this key (HTTP 429).{later}")
    return ConnectionResult(False, f"The provider answered HTTP {status}.")


def _base_url(provider_key: str, base_url: str) -> str | None:
    return ((base_url or "").strip() or default_base_url(provider_key) or "").rstrip("/") or None


def probe_models(
    *,
    provider_key: str,
    base_url: str,
    api_key: str | None,
    allow_private: bool,
    resolver: Resolver | None = None,
    timeout: float = TIMEOUT_SECONDS,
) -> ConnectionResult:
    if provider_key == "scripted":
        return ConnectionResult(True, "The scripted provider runs offline and is always available.", ("scripted",))
    spec = MODEL_LISTS.get(provider_key)
    if spec is None:
        return ConnectionResult(False, f"Unsupported provider “{provider_key}”.")
    base = _base_url(provider_key, base_url)
    if base is None:
        return ConnectionResult(False, "This provider needs a base URL (its OpenAI-compatible server, …/v1). Edit the account.")
    try:
        addresses = base_url_check(base, allow_private=allow_private, resolver=resolver)
    except BaseUrlError as exc:
        return ConnectionResult(False, str(exc))
    allowlist = list(ANY_ADDRESS) if allow_private else [str(ipaddress.ip_network(ip)) for ip in addresses]
    headers = {"Accept": "application/json", **dict(spec.fixed_headers), **(spec.auth_headers(api_key) if api_key else {})}
    redactor = Redactor([api_key] if api_key else [])
    try:
        response = send("GET", base + spec.path, headers=headers, timeout=timeout, allowlist=allowlist, resolver=resolver, max_redirects=0)
    except NetworkPolicyError as exc:
        text = str(exc)
        if text == "too many redirects":
            text = "the server answered with a redirect; use the final URL as the base URL"
        return ConnectionResult(False, redactor.text(f"Could not reach the provider: {text}."))
    if response.status_code >= 400:
        return _error_result(provider_key, response)
    status = response.status_code
    models = _model_ids(response.body, spec)
    if not models:
        return ConnectionResult(True, f"Connected (HTTP {status}), but the answer listed no models.")
    shown = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
    return ConnectionResult(
        True, redactor.text(f"Connected: {len(models)} model{'s' if len(models) != 1 else ''} available ({shown})."), tuple(models)
    )
