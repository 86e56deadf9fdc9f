"""Domain errors of regression suites: a 400 naming the field (core/api.py maps ValidationError once)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

# Codes that are not a 400: the API's error mapping (core/api.py) reads ``status_code``.
_STATUS_CODES = {"not_found": 404, "conflict": 409, "suite_in_use": 409}


class RegressionError(ValidationError):
    def __init__(self, message: str, *, field: str = "non_field_errors", code: str = "invalid_request"):
        super().__init__({field: [message]}, code=code)
        self.field = field
        self.text = message
        self.error_code = code
        self.reason_code = code
        self.status_code = _STATUS_CODES.get(code, 400)
