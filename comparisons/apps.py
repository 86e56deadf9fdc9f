"""Comparisons of two lanes and release gates."""

from __future__ import annotations

from django.apps import AppConfig


class ComparisonsConfig(AppConfig):
    name = "comparisons"
