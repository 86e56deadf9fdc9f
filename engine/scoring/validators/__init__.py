"""Deterministic validators. Each module registers its types in ``base.REGISTRY`` on import."""

from __future__ import annotations

from engine.scoring.validators import code, files, mathequiv, overlap, similarity, structured, text, tools  # noqa: F401
from engine.scoring.validators.base import REGISTRY, ValidatorResult, run_validator

VALIDATOR_TYPES = frozenset(REGISTRY)

__all__ = ["REGISTRY", "VALIDATOR_TYPES", "ValidatorResult", "run_validator"]
