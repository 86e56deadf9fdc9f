"""Error objects produced by every stage of bundle processing."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class ValidationError:
    """One problem with a bundle.

    ``field`` is the spec's dotted/indexed path (``input_sets[0].cases[2].challenge_key``).
    It is ``""`` for document-level decode errors (YAML syntax, size, encoding) whose text stands
    on its own (spec §1.3). ``line`` is 1-based, ``None`` when no source position applies.
    """

    field: str
    message: str
    line: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {"field": self.field, "message": self.message, "line": self.line}

    @property
    def text(self) -> str:
        return f"{self.field} {self.message}" if self.field else self.message


@dataclasses.dataclass(frozen=True, slots=True)
class ValidationWarning:
    """Something legal that probably does not do what the author meant (the bundle stays valid).

    ``path`` is a field path like ``ValidationError.field``; ``line`` is 1-based or ``None``.
    Warnings never make a bundle invalid (docs/pack-authoring.md, "Warnings").
    """

    path: str
    message: str
    line: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "message": self.message, "line": self.line}

    @property
    def text(self) -> str:
        return f"{self.path} {self.message}" if self.path else self.message


def format_errors_text(errors: list[ValidationError]) -> str:
    """Spec §1.3: ``field + " " + message`` per error, joined with ``"; "``."""
    return "; ".join(error.text for error in errors)


class DecodeFailure(Exception):
    """Internal: aborts parsing with a ready-made error (never escapes the package)."""

    def __init__(self, message: str, line: int | None = None, field: str = "") -> None:
        super().__init__(message)
        self.error = ValidationError(field=field, message=message, line=line)
