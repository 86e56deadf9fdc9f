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


def format_errors_text(errors: list[ValidationError]) -> str:
    """Spec §1.3: ``field + " " + message`` per error, joined with ``"; "``."""
    return "; ".join(error.text for error in errors)


class DecodeFailure(Exception):
    """Internal: aborts parsing with a ready-made error (never escapes the package)."""

    def __init__(self, message: str, line: int | None = None, field: str = "") -> None:
        super().__init__(message)
        self.error = ValidationError(field=field, message=message, line=line)
