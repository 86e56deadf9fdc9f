"""``Idempotency-Key`` for API writes that must not happen twice (start a run, publish, upload).

A client sends a key of its choosing (the CLI: one per invocation). The first request with that
key runs and its answer is stored for ``IDEMPOTENCY_KEY_TTL_HOURS`` (24 h) under
(workspace, user, key) with a hash of the request. A retry with the same key and the same request
gets the stored answer again (header ``Idempotent-Replayed: true``), whatever happened since; the
same key with another request is a 409 ``idempotency_key_reused``. Requests with the same key
that arrive while the first still runs wait for its answer (up to ``_WAIT_SECONDS``, then a 409
``idempotency_key_in_use`` with ``Retry-After``), so only one of them executes. A request that
failed with an exception or a 5xx leaves no record: retrying it runs it again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ApiError
from core.writes import insert_or_none
from workspaces.models import IdempotentRequest

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# How long a retry waits for the first request with its key to finish before answering 409.
_WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.1
# A record still marked running after this long belongs to a process that died mid-request.
_ABANDONED_AFTER = timedelta(minutes=10)


def _ttl() -> timedelta:
    return timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS)


def idempotency_key(request: Request) -> str | None:
    """The request's key, or None; a 400 naming the header when it is not 1–255 visible ASCII characters."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    if not 1 <= len(raw) <= 255 or not all(33 <= ord(char) <= 126 for char in raw):
        raise ApiError(
            400,
            "invalid_request",
            f"Invalid input: {HEADER}: send 1 to 255 visible ASCII characters (e.g. a UUID), or leave the header out.",
            fields={HEADER: ["1 to 255 visible ASCII characters"]},
        )
    return raw


def _feed(digest: Any, value: Any) -> None:
    if isinstance(value, UploadedFile):
        digest.update(f"file:{value.name}:{value.size}:".encode())
        for chunk in value.chunks():
            digest.update(chunk)
        value.seek(0)
    else:
        digest.update(json.dumps(value, sort_keys=True, cls=DjangoJSONEncoder).encode())


def request_fingerprint(request: Request) -> str:
    """SHA-256 of the method, path and parsed body: the same JSON in another key order is the same request."""
    digest = hashlib.sha256(f"{request.method} {request.path}\n".encode())
    data = request.data
    if hasattr(data, "lists"):  # a QueryDict (form or multipart): every value of every field
        for name, values in sorted(data.lists()):
            digest.update(f"\n{name}=".encode())
            for value in values:
                _feed(digest, value)
    else:
        _feed(digest, data)
    for name, files in sorted(request.FILES.lists()) if request.FILES else ():
        digest.update(f"\n{name}@".encode())
        for upload in files:
            _feed(digest, upload)
    return digest.hexdigest()


def _reserve(*, workspace: Any, user: Any, key: str, fingerprint: str) -> IdempotentRequest | None:
    """Claim the key for this request (None: it is taken); expired and abandoned claims are dropped first."""
    now = timezone.now()
    IdempotentRequest.objects.filter(workspace=workspace, created_at__lt=now - _ttl()).delete()
    IdempotentRequest.objects.filter(
        workspace=workspace, user=user, key=key, response_status__isnull=True, created_at__lt=now - _ABANDONED_AFTER
    ).delete()
    record = IdempotentRequest(workspace=workspace, user=user, key=key, request_hash=fingerprint)
    return record if insert_or_none(record) is not None else None


def _replay(record: IdempotentRequest) -> Response:
    assert record.response_status is not None
    return Response(record.response_body, status=record.response_status, headers={REPLAYED_HEADER: "true"})


def _answer_for_taken_key(*, workspace: Any, user: Any, key: str, fingerprint: str) -> Response | None:
    """The stored answer for a taken key (waiting while its first request runs); None if the claim vanished."""
    deadline = time.monotonic() + _WAIT_SECONDS
    while True:
        record = IdempotentRequest.objects.filter(workspace=workspace, user=user, key=key).first()
        if record is None:
            return None
        if record.request_hash != fingerprint:
            raise ApiError(
                409,
                "idempotency_key_reused",
                f"This {HEADER} was already used for another request: send a new key for a new request.",
                fields={HEADER: ["already used for another request"]},
            )
        if record.response_status is not None:
            return _replay(record)
        if time.monotonic() >= deadline:
            raise ApiError(
                409,
                "idempotency_key_in_use",
                f"A request with this {HEADER} is still running: retry in a moment to get its answer.",
                fields={HEADER: ["a request with this key is still running"]},
                extra={"retry_after": 1},
            )
        time.sleep(_POLL_SECONDS)


def _run_once(view: Any, request: Request, handler: Callable[[], Response], key: str) -> Response:
    workspace, user = view.workspace, request.user
    fingerprint = request_fingerprint(request)
    for _ in range(3):  # a claim can vanish between our insert and our read (its request failed): try again
        record = _reserve(workspace=workspace, user=user, key=key, fingerprint=fingerprint)
        if record is None:
            answer = _answer_for_taken_key(workspace=workspace, user=user, key=key, fingerprint=fingerprint)
            if answer is not None:
                return answer
            continue
        try:
            response = handler()
        except BaseException:
            record.delete()  # nothing to replay: a retry runs the request again
            raise
        if response.status_code >= 500:
            record.delete()
            return response
        record.response_status = response.status_code
        record.response_body = json.loads(json.dumps(response.data, cls=DjangoJSONEncoder))
        record.save(update_fields=["response_status", "response_body"])
        return response
    raise ApiError(409, "idempotency_key_in_use", f"Requests with this {HEADER} keep failing: retry with a new key.")


def idempotent(method: Callable[..., Response]) -> Callable[..., Response]:
    """Honour ``Idempotency-Key`` on a :class:`~workspaces.api.base.WorkspaceApiView` write (the
    workspace and user are known by then; without the header the request runs as usual)."""

    @functools.wraps(method)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = idempotency_key(request)
        if key is None:
            return method(view, request, *args, **kwargs)
        return _run_once(view, request, lambda: method(view, request, *args, **kwargs), key)

    return wrapper


# For ``@extend_schema(parameters=[IDEMPOTENCY_PARAMETER])`` on the views that honour the header.
IDEMPOTENCY_PARAMETER = OpenApiParameter(
    HEADER,
    str,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Any string of 1 to 255 visible ASCII characters (e.g. a UUID). Retrying with the same key and body "
    "returns the first answer (header Idempotent-Replayed: true) for 24 hours instead of doing the work again; "
    "the same key with another body is 409 idempotency_key_reused.",
)
