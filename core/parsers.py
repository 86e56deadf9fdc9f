"""The API's JSON parser: bounded size and depth, and only values every database can store.

Django checks ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only when ``request.body`` is read, and DRF's JSON
parser may read the stream directly, so the limit is enforced here too (413). Deep nesting
(a RecursionError in whatever walks it later), integers beyond 64 bits (SQLite raises
OverflowError), non-finite numbers and NUL characters (PostgreSQL rejects them in text and
jsonb) are refused with a 400 that names the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from core.api import ApiError
from core.errors import TOO_LARGE

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _path(parts: tuple) -> str:
    return ".".join(str(part) for part in parts) or "non_field_errors"


def _invalid(parts: tuple, message: str) -> ApiError:
    field = _path(parts)
    return ApiError(400, "invalid_request", f"Invalid input: {field}: {message}", fields={field: [message]})


def check_json_value(data: Any, *, max_depth: int) -> None:
    """Raise a 400 ``ApiError`` naming the first value no database could store safely.

    Iterative, so the check itself cannot exhaust the stack.
    """
    stack: list[tuple[Any, tuple]] = [(data, ())]
    while stack:
        value, parts = stack.pop()
        if isinstance(value, dict | list) and len(parts) >= max_depth:
            raise _invalid(parts, f"JSON is nested more than {max_depth} levels deep.")
        if isinstance(value, dict):
            for key, item in value.items():
                if "\x00" in key:
                    raise _invalid(parts, "Null characters are not allowed in keys.")
                stack.append((item, (*parts, key)))
        elif isinstance(value, list):
            stack.extend((item, (*parts, index)) for index, item in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise _invalid(parts, "Null characters are not allowed.")
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise _invalid(parts, "Integer is outside the 64-bit range.")
        elif isinstance(value, float) and not math.isfinite(value):
            raise _invalid(parts, "Number is out of range.")


def read_bounded(stream: Any, parser_context: Mapping[str, Any] | None) -> bytes:
    """The body, or 413 when it is larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE``."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    request = (parser_context or {}).get("request")
    if request is not None and limit is not None:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            raise ApiError(TOO_LARGE.status, TOO_LARGE.code, _too_large_message(limit))
    if stream is None:
        return b""
    raw = stream.read() if limit is None else stream.read(limit + 1)
    if limit is not None and len(raw) > limit:
        raise ApiError(TOO_LARGE.status, TOO_LARGE.code, _too_large_message(limit))
    return raw


def _too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit} bytes."


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = read_bounded(stream, parser_context)
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = raw.decode(encoding)
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None
        except (ValueError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        check_json_value(data, max_depth=getattr(settings, "API_JSON_MAX_DEPTH", 64))
        return data
