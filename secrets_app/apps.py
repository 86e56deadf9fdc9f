from __future__ import annotations

from django.apps import AppConfig


class SecretsAppConfig(AppConfig):
    verbose_name = "Secrets"
    name = "secrets_app"
