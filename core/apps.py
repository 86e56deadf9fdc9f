from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Shared web/API plumbing. Imports no app of ours (scripts/import_graph.py checks it)."""

    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from core import schema  # noqa: F401 - registers the OpenAPI bearer-auth extension
