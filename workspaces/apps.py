from __future__ import annotations

from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces"
