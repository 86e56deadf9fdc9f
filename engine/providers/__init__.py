"""Model providers: ``create_provider(provider_key, …)`` returns an :class:`engine.types.Provider`."""

from __future__ import annotations

from engine.providers.base import BrokenProvider, ProviderSettings
from engine.providers.registry import PROVIDER_KEYS, create_provider

__all__ = ["PROVIDER_KEYS", "BrokenProvider", "ProviderSettings", "create_provider"]
