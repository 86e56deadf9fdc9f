"""Callback tokens: scoped to one case attempt, expiring, tamper-evident (runs/pipeline/hosted/tokens.py)."""

from __future__ import annotations

import base64
import json

import pytest

from runs.pipeline.hosted.tokens import TokenInvalid, TokenScope, token_issue, token_verify

# Far in the future: the module is imported at collection, long before a test in a full run executes.
SCOPE = TokenScope(run_id=1, lane_id=2, case_run_id=3, attempt=1, expires_at=4_102_444_800)  # 2100-01-01


def test_it_round_trips_the_scope():
    assert token_verify(token_issue(SCOPE)) == SCOPE


def test_it_rejects_an_expired_token():
    token = token_issue(SCOPE)
    with pytest.raises(TokenInvalid, match="expired"):
        token_verify(token, now=SCOPE.expires_at)


def test_it_rejects_a_token_whose_scope_was_edited():
    body, _, signature = token_issue(SCOPE).partition(".")
    data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    data["case_run_id"] = 4  # another case
    forged = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":"), sort_keys=True).encode()).rstrip(b"=").decode()
    with pytest.raises(TokenInvalid, match="signature"):
        token_verify(f"{forged}.{signature}")


def test_it_rejects_a_tampered_signature_and_garbage():
    body, _, signature = token_issue(SCOPE).partition(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    for bad in (f"{body}.{flipped}", body, "", "a.b", "x" * 2000):
        with pytest.raises(TokenInvalid):
            token_verify(bad)


def test_it_depends_on_the_secret_key(settings):
    token = token_issue(SCOPE)
    settings.SECRET_KEY = "another-key"
    with pytest.raises(TokenInvalid, match="signature"):
        token_verify(token)


def test_each_case_attempt_gets_its_own_token():
    other_attempt = TokenScope(run_id=1, lane_id=2, case_run_id=3, attempt=2, expires_at=SCOPE.expires_at)
    assert token_issue(SCOPE) != token_issue(other_attempt)
