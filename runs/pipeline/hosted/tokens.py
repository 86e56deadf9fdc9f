"""Per-case callback tokens: an HMAC over run, lane, case run, attempt and expiry.

``<base64url(json scope)>.<base64url(hmac-sha256)>``. The key is derived from ``SECRET_KEY`` with
a purpose string (Django's ``salted_hmac``), so a token is useless anywhere else a signature of
the same key is checked. The scope is readable by whoever holds the token (it names ids the agent
already knows) and nothing secret goes in it; a token only ever authorises writing the events of
its one case attempt until its expiry, which is the case's deadline.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import time

from django.utils.crypto import constant_time_compare, salted_hmac

PURPOSE = "agentclash.runs.pipeline.hosted.callback-token.v1"


class TokenInvalid(Exception):
    """The token is malformed, forged, for another case, or expired (the message says which, for logs)."""


@dataclasses.dataclass(frozen=True)
class TokenScope:
    run_id: int
    lane_id: int
    case_run_id: int
    attempt: int
    expires_at: int  # Unix seconds


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(body: str) -> str:
    return _b64(salted_hmac(PURPOSE, body, algorithm="sha256").digest())


def token_issue(scope: TokenScope) -> str:
    body = _b64(json.dumps(dataclasses.asdict(scope), separators=(",", ":"), sort_keys=True).encode())
    return f"{body}.{_signature(body)}"


def token_verify(token: str, *, now: float | None = None) -> TokenScope:
    """The token's scope when its signature is ours and it has not expired. Raises TokenInvalid."""
    body, sep, signature = (token or "").strip().partition(".")
    if not sep or not body or not signature or len(token) > 1000:
        raise TokenInvalid("malformed token")
    if not constant_time_compare(signature, _signature(body)):
        raise TokenInvalid("bad signature")
    try:
        data = json.loads(_unb64(body))
        scope = TokenScope(**{f.name: int(data[f.name]) for f in dataclasses.fields(TokenScope)})
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise TokenInvalid("malformed scope") from None
    if scope.expires_at <= (time.time() if now is None else now):
        raise TokenInvalid("expired")
    return scope
