"""Errors the client can act on: the one domain error, and input the request itself made unusable.

:class:`DomainError` is what services and selectors raise when a request cannot be honoured (a
field's value breaks a rule, an object is missing, a state conflicts). It is mapped once for the
API (``core.api.exception_handler``: the error envelope) and once for forms
(``core.forms.form_add_domain_error``: the message next to its field). :func:`bad_input` is the
one home for exceptions the request's *content* caused (too large, too many fields, a value the
database refuses), used by the API exception handler, the error middleware and the
400/403/404/500 handlers, so HTML pages and the API agree on their status.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any, ClassVar

from django.core.exceptions import (
    NON_FIELD_ERRORS,
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
    ValidationError,
)
from django.db import DataError, models


class DomainError(Exception):
    """A request the domain cannot honour, said so a person can fix it.

    ``message`` is human text that names the field and what to do; ``field`` is the input it is
    about (a form field / API field name, the same as the service's argument) or None for the
    request as a whole; ``code`` is a short machine string for API clients; ``status`` the HTTP
    status the API answers with (400 unless a subclass or the caller says otherwise). ``extra``
    adds top-level keys to the API's error body (e.g. a pack's line-numbered errors).
    """

    status: int = 400
    default_code: ClassVar[str] = "invalid_request"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        code: str | None = None,
        status: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.code = code or self.default_code
        if status is not None:
            self.status = status
        self.extra: dict[str, Any] = dict(extra or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, field={self.field!r}, code={self.code!r}, status={self.status})"

    @classmethod
    def from_validation_error(cls, error: ValidationError) -> DomainError:
        """A model's ``full_clean()`` error as a domain error: its first field and that field's messages."""
        if hasattr(error, "error_dict"):
            field, messages = next(iter(error.message_dict.items()))
            return cls(" ".join(messages), field=None if field == NON_FIELD_ERRORS else field)
        return cls(" ".join(error.messages))


class NotFound(DomainError):
    """The object the request names does not exist (or is not this workspace's): a 404."""

    status = 404
    default_code = "not_found"


class Forbidden(DomainError):
    """The user may not do this here: a 403."""

    status = 403
    default_code = "forbidden"


class Conflict(DomainError):
    """The request clashes with the current state (a duplicate, a version that moved on): a 409."""

    status = 409
    default_code = "conflict"


class QuotaExceeded(DomainError):
    """A write would take a stored-bytes budget over its operator limit: a 413 ``quota_exceeded``
    naming the budget, its setting, the limit and what is used (never retried: it will not fit later
    unless something is deleted or the operator raises the limit)."""

    status = 413
    default_code = "quota_exceeded"

    def __init__(self, *, budget: str, setting: str, limit: int, used: int, size: int, field: str | None = None) -> None:
        super().__init__(
            f"The {budget} quota of {limit} bytes is used up ({used} bytes stored, this needs {size} more): "
            f"delete what is no longer needed, or ask the operator to raise {setting}.",
            field=field,
            extra={"quota": {"budget": budget, "setting": setting, "limit": limit, "used": used, "requested": size}},
        )


def full_clean(obj: models.Model, *, exclude: Collection[str] | None = None) -> None:
    """``obj.full_clean()`` for services: a model rule the object breaks becomes a :class:`DomainError`."""
    try:
        obj.full_clean(exclude=exclude)
    except ValidationError as exc:
        raise (_unique_clash(exc) or DomainError.from_validation_error(exc)) from None


def _unique_clash(error: ValidationError) -> Conflict | None:
    """A unique constraint's refusal as a 409 naming its field (not the workspace it is scoped to).

    Services check for a duplicate first (a 400 naming the field); a twin committed by a concurrent
    request between that check and ``full_clean`` lands here instead, and is a conflict."""
    for item in getattr(error, "error_dict", {}).get(NON_FIELD_ERRORS, []):
        fields = [name for name in (item.params or {}).get("unique_check", ()) if name != "workspace"]
        if item.code in ("unique", "unique_together") and fields:
            return Conflict(" ".join(item.messages), field=fields[-1])
    return None


@dataclasses.dataclass(frozen=True)
class BadInput:
    status: int
    code: str
    message: str


TOO_LARGE = BadInput(413, "payload_too_large", "The request body is too large.")


def bad_input(exc: BaseException | None) -> BadInput | None:
    """The client-facing status for an exception caused by the request's content, or None."""
    if exc is None:
        return None
    if isinstance(exc, RequestDataTooBig):
        return TOO_LARGE
    if isinstance(exc, TooManyFieldsSent):
        return BadInput(400, "invalid_request", "The request has too many fields.")
    if isinstance(exc, TooManyFilesSent):
        return BadInput(400, "invalid_request", "The request has too many files.")
    if isinstance(exc, DisallowedHost):
        return BadInput(400, "invalid_host", "This server does not serve the requested host name.")
    if isinstance(exc, SuspiciousOperation):
        return BadInput(400, "invalid_request", "The request was malformed.")
    if isinstance(exc, RecursionError):
        return BadInput(400, "invalid_request", "The request is nested too deeply.")
    if isinstance(exc, OverflowError):
        # SQLite refuses integers beyond 64 bits when they reach a query.
        return BadInput(400, "invalid_request", "A number in the request is out of range.")
    if isinstance(exc, DataError):
        # PostgreSQL refuses NUL characters, out-of-range numbers and over-long values.
        return BadInput(400, "invalid_request", "A value in the request cannot be stored (out of range or invalid characters).")
    return None
