"""The provider registry: provider key → adapter (spec runtime.md §7.1).

Adding a provider: write ``engine/providers/<name>.py`` with a class taking
:class:`~engine.providers.base.ProviderSettings`, then add one line to ``_ADAPTERS``.
Adapters are imported lazily so the SDKs load only when used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from engine.net.guard import Resolver
from engine.providers import errors
from engine.providers.base import BrokenProvider, ProviderSettings
from engine.types import JSON, Provider, ProviderError

# provider key → (module, class, default base URL; None = caller must supply one)
_ADAPTERS: dict[str, tuple[str, str, str | None]] = {
    "scripted": ("engine.providers.scripted", "ScriptedProvider", ""),
    "openai": ("engine.providers.openai", "OpenAIProvider", "https://api.openai.com/v1"),
    "xai": ("engine.providers.openai", "OpenAIProvider", "https://api.x.ai/v1"),
    "openrouter": ("engine.providers.openai", "OpenAIProvider", "https://openrouter.ai/api/v1"),
    "mistral": ("engine.providers.openai", "OpenAIProvider", "https://api.mistral.ai/v1"),
    "custom": ("engine.providers.openai", "OpenAIProvider", None),
    "anthropic": ("engine.providers.anthropic", "AnthropicProvider", "https://api.anthropic.com"),
    "gemini": ("engine.providers.gemini", "GeminiProvider", "https://generativelanguage.googleapis.com"),
}

PROVIDER_KEYS = frozenset(_ADAPTERS)

# The adapters that serve ``responses`` packs (the OpenAI Responses API), by provider key: OpenAI,
# any compatible server behind a ``custom`` base URL, and the offline scripted provider. Other
# keys get an ``unsupported_capability`` provider (docs/responses-mode.md).
_RESPONSES_ADAPTERS: dict[str, tuple[str, str]] = {
    "scripted": ("engine.providers.scripted", "ScriptedProvider"),
    "openai": ("engine.providers.openai_responses", "OpenAIResponsesProvider"),
    "custom": ("engine.providers.openai_responses", "OpenAIResponsesProvider"),
}
RESPONSES_PROVIDER_KEYS = frozenset(_RESPONSES_ADAPTERS)
API_CHAT = "chat"
API_RESPONSES = "responses"


def default_base_url(provider_key: str) -> str | None:
    """The vendor's base URL for ``provider_key``; None when the account must supply one (``custom``)."""
    entry = _ADAPTERS.get(provider_key)
    return entry[2] if entry else None


def normalise_case_inputs(case_inputs: dict[str, JSON] | list[JSON] | None) -> dict[str, JSON]:
    """Accept ``{key: value}`` or the bundle's ``[{key, kind, value}, …]`` list."""
    if not case_inputs:
        return {}
    if isinstance(case_inputs, dict):
        return dict(case_inputs)
    result: dict[str, JSON] = {}
    for item in case_inputs:
        if isinstance(item, dict) and str(item.get("key") or "").strip():
            result[str(item["key"]).strip()] = item.get("value")
    return result


def create_provider(
    provider_key: str,
    *,
    api_key: str | None,
    base_url: str | None,
    deployment_config: dict[str, JSON],
    case_key: str = "",
    case_inputs: dict[str, JSON] | list[JSON] | None = None,
    trial: int = 0,
    http_timeout: float = 60.0,
    allow_private_urls: bool = False,
    resolver: Resolver | None = None,
    api: str = API_CHAT,
) -> Provider:
    """Build the adapter for ``provider_key``.

    Never raises for configuration problems: an unknown key (``unsupported_provider``) or a
    ``custom`` account without a base URL (``invalid_request``) yields a
    :class:`BrokenProvider` whose calls fail with that non-retryable error, so the case ends
    as a normal ``provider_error``. ``base_url`` is checked when the account is saved (§7.4)
    and again by the SDK client's pinned transport on first connect: its host is resolved once,
    every address must pass (public, or private when ``allow_private_urls``), and the client
    then connects only to those addresses. ``api="responses"`` picks the provider's OpenAI
    Responses adapter (``responses`` packs); a key without one yields an
    ``unsupported_capability`` :class:`BrokenProvider`. ``trial`` is the trial index of the case
    (repeats of one case; 0 for the first or only one).
    """
    key = (provider_key or "").strip().lower()
    entry = _ADAPTERS.get(key)
    if entry is None:
        return BrokenProvider(key, ProviderError(errors.UNSUPPORTED_PROVIDER, f"unsupported provider {key!r}"))
    module_name, class_name, default_base_url = entry
    if api == API_RESPONSES:
        if key not in _RESPONSES_ADAPTERS:
            message = f"provider {key!r} does not serve the OpenAI Responses API (responses packs need openai, custom or scripted)"
            return BrokenProvider(key, ProviderError(errors.UNSUPPORTED_CAPABILITY, message))
        module_name, class_name = _RESPONSES_ADAPTERS[key]
    resolved_base_url = (base_url or "").strip() or default_base_url
    if resolved_base_url is None:
        return BrokenProvider(key, ProviderError(errors.INVALID_REQUEST, f"provider {key!r} requires a base URL"))
    settings = ProviderSettings(
        provider_key=key,
        api_key=api_key,
        base_url=resolved_base_url or None,
        deployment_config=dict(deployment_config or {}),
        case_key=case_key,
        case_inputs=normalise_case_inputs(case_inputs),
        trial=trial,
        http_timeout=http_timeout,
        allow_private_urls=allow_private_urls,
        resolver=resolver,
    )
    adapter: Callable[[ProviderSettings], Provider] = getattr(importlib.import_module(module_name), class_name)
    return adapter(settings)
