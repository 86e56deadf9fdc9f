from __future__ import annotations

from django.apps import AppConfig


class PacksConfig(AppConfig):
    name = "packs"
