"""Which exceptions mean "the client sent something we cannot take" rather than "we broke".

One home for the mapping, used by the API exception handler, the error middleware and the
400/403/404/500 handlers, so HTML pages and the API agree on the status of ugly input.
"""

from __future__ import annotations

import dataclasses

from django.core.exceptions import DisallowedHost, RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent, TooManyFilesSent
from django.db import DataError


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
