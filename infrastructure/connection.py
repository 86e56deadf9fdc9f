""" "Test connection" for provider accounts: list the provider's models through the network guard.

openai (and OpenAI-compatible servers): ``GET {base}/models`` with ``Authorization: Bearer``.
anthropic: ``GET {base}/v1/models`` with ``x-api-key`` and ``anthropic-version``.
The base URL is checked (§7.4) and the request is pinned to the checked addresses, sent without
proxies and without following redirects. Messages are short, never contain the key (they go
through the redactor too) and never contain resolved addresses.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json

from engine.net.guard import NetworkPolicyError, send
from engine.redact import Redactor
from infrastructure.base_url import BaseUrlError, Resolver, base_url_check

DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
MODELS_PATH = {"openai": "/models", "anthropic": "/v1/models"}
TIMEOUT_SECONDS = 10.0
ANY_ADDRESS = ("0.0.0.0/0", "::/0")


@dataclasses.dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    message: str
    models: tuple[str, ...] = ()


def _model_ids(body: bytes) -> list[str]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return []
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [str(item["id"]) for item in items if isinstance(item, dict) and item.get("id")]


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
    if provider_key not in MODELS_PATH:
        return ConnectionResult(False, f"Unsupported provider “{provider_key}”.")
    base = (base_url or DEFAULT_BASE_URLS[provider_key]).rstrip("/")
    try:
        addresses = base_url_check(base, allow_private=allow_private, resolver=resolver)
    except BaseUrlError as exc:
        return ConnectionResult(False, str(exc))
    allowlist = list(ANY_ADDRESS) if allow_private else [str(ipaddress.ip_network(ip)) for ip in addresses]
    headers = {"Accept": "application/json"}
    if provider_key == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
        if api_key:
            headers["x-api-key"] = api_key
    elif api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    redactor = Redactor([api_key] if api_key else [])
    try:
        response = send(
            "GET",
            base + MODELS_PATH[provider_key],
            headers=headers,
            timeout=timeout,
            allowlist=allowlist,
            resolver=resolver,
            max_redirects=0,
        )
    except NetworkPolicyError as exc:
        text = str(exc)
        if text == "too many redirects":
            text = "the server answered with a redirect; use the final URL as the base URL"
        return ConnectionResult(False, redactor.text(f"Could not reach the provider: {text}."))
    status = response.status_code
    if status in (401, 403):
        return ConnectionResult(False, f"The provider refused the credential (HTTP {status}). Check the API key secret.")
    if status == 404:
        return ConnectionResult(
            False,
            "The provider has no model list at this base URL (HTTP 404). Check the base URL (OpenAI-compatible servers usually end in /v1).",
        )
    if status >= 400:
        return ConnectionResult(False, f"The provider answered HTTP {status}.")
    models = _model_ids(response.body)
    if not models:
        return ConnectionResult(True, f"Connected (HTTP {status}), but the answer listed no models.")
    shown = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
    return ConnectionResult(
        True, redactor.text(f"Connected: {len(models)} model{'s' if len(models) != 1 else ''} available ({shown})."), tuple(models)
    )
