"""Domain errors of regression suites: a 400 naming the field (core/api.py maps ValidationError once)."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class RegressionError(ValidationError):
    def __init__(self, message: str, *, field: str = "non_field_errors", code: str = "invalid_request"):
        super().__init__({field: [message]}, code=code)
        self.field = field
        self.text = message
        self.error_code = code
