"""The hosted-agent callback: ``POST /hooks/hosted/<case_run_id>/events`` with ``Authorization: Bearer``.

No session, no CSRF (the bearer token is the credential; a browser can't forge it), a body bound
read before parsing, then one message per request (docs/hosted-agents.md). Answers use the API's
error envelope: 401 bad/expired/other-case token, 400 bad JSON or schema (naming the field),
409 replayed event id or second final answer, 410 finished case, 413 body too large.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.api import error_body
from core.throttling import RateState, window_hit
from runs.pipeline.hosted.callback import CallbackRefused, hosted_event_record, message_parse
from runs.pipeline.hosted.tokens import TokenInvalid, token_verify

logger = logging.getLogger(__name__)


def _refused(exc: CallbackRefused) -> JsonResponse:
    fields = {exc.field: [exc.message]} if exc.status == 400 else None
    return JsonResponse(error_body(exc.code, exc.message, fields), status=exc.status)


def _with_budget(response: JsonResponse, state: RateState | None) -> JsonResponse:
    if state is not None:
        response["RateLimit-Limit"], response["RateLimit-Remaining"] = str(state.limit), str(state.remaining)
        response["RateLimit-Reset"] = str(state.reset)
        if not state.allowed:
            response["Retry-After"] = str(state.reset)
    return response


def _refuse_over_budget(state: RateState) -> None:
    if not state.allowed:
        rate = settings.HOSTED_CALLBACK_THROTTLE
        raise CallbackRefused(429, "throttled", f"Too many messages for this case (at most {rate}): retry after {state.reset} s.")


def _body(request: HttpRequest) -> bytes:
    limit = int(settings.HOSTED_CALLBACK_MAX_BYTES)
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise CallbackRefused(413, "payload_too_large", f"A message may be at most {limit} bytes.")
    body = request.read(limit + 1)
    if len(body) > limit:
        raise CallbackRefused(413, "payload_too_large", f"A message may be at most {limit} bytes.")
    return body


@csrf_exempt
@require_POST
def hosted_event_post(request: HttpRequest, case_run_id: int) -> JsonResponse:
    state: RateState | None = None
    try:
        scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise CallbackRefused(401, "unauthenticated", "Send the case's token as Authorization: Bearer <token>.")
        try:
            scope = token_verify(token)
        except TokenInvalid as exc:
            logger.info("hosted callback for case run %s refused: %s", case_run_id, exc)
            raise CallbackRefused(401, "invalid_token", "The token is invalid or expired.") from None
        if scope.case_run_id != case_run_id:
            raise CallbackRefused(401, "invalid_token", "The token is not valid for this case.")
        # Counted per case (every attempt's token alike), after the token: strangers cannot use it up.
        state = window_hit("hosted_callback", str(case_run_id), settings.HOSTED_CALLBACK_THROTTLE)
        _refuse_over_budget(state)
        body = _body(request)
        message = message_parse(body)
        event_id = hosted_event_record(scope=scope, case_run_id=case_run_id, message=message, size=len(body))
    except CallbackRefused as exc:
        return _with_budget(_refused(exc), state)
    return _with_budget(JsonResponse({"recorded": True, "event_id": message["event_id"], "stored_event_id": event_id}, status=201), state)
