"""Regression suites, promotion of failed cases, the failures review."""

from __future__ import annotations

from django.apps import AppConfig


class RegressionConfig(AppConfig):
    name = "regression"
