"""Case verdicts, lane and run scorecards."""

from __future__ import annotations

from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
