from __future__ import annotations

from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces and infrastructure"

    def ready(self) -> None:
        import agentclash.schema  # noqa: F401 - registers the OpenAPI auth extension
