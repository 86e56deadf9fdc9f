"""The one redaction implementation: secret values and their common encodings never come back out."""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

import pytest

from engine.redact import REDACTED, Redactor


def redact(value: Any, secret_values: Iterable[str]) -> Any:
    redactor = Redactor(secret_values)
    return redactor.text(value) if isinstance(value, str) else redactor.json(value)


def test_it_redacts_a_value_inside_a_json_document():
    doc = {"headers": {"Authorization": "Bearer sk-abc123xyz"}, "body": ["ok", {"token": "sk-abc123xyz"}], "n": 3}
    assert redact(doc, ["sk-abc123xyz"]) == {
        "headers": {"Authorization": f"Bearer {REDACTED}"},
        "body": ["ok", {"token": REDACTED}],
        "n": 3,
    }


def test_it_redacts_a_value_inside_serialised_json_text():
    text = json.dumps({"echo": "my password is pa55word!"})
    assert "pa55word!" not in redact(text, ["pa55word!"])


def test_it_redacts_json_keys_too():
    assert redact({"sk-key-as-key": 1}, ["sk-key-as-key"]) == {REDACTED: 1}


def test_it_redacts_every_repetition():
    assert redact("tok tok-tok tok", ["tok"]) == f"{REDACTED} {REDACTED}-{REDACTED} {REDACTED}"


def test_it_redacts_the_longest_of_overlapping_values_first():
    # "abc" is inside "abcdef": replacing the short one first would leave "def" visible.
    out = redact("x abcdef y abc z", ["abc", "abcdef"])
    assert out == f"x {REDACTED} y {REDACTED} z"
    assert "def" not in out


def test_it_redacts_values_that_overlap_at_their_edges():
    out = redact("secretABCsecret2", ["secretABC", "ABCsecret2"])
    assert "secretABC" not in out and "ABCsecret2" not in out and "secret2" not in out.replace(REDACTED, "")


@pytest.mark.parametrize("encode", [lambda v: urllib.parse.quote(v, safe=""), lambda v: urllib.parse.quote_plus(v)])
def test_it_redacts_url_encoded_forms(encode):
    value = "p@ss w/rd&=?"
    url = f"https://api.example.com/x?key={encode(value)}&other=1"
    out = redact(url, [value])
    assert encode(value) not in out and "other=1" in out


def _value_recoverable(text: str, value: str) -> bool:
    if value in text:
        return True
    for token in re.findall(r"[A-Za-z0-9+/=_-]{4,}", text):
        padded = token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4)
        try:
            if value.encode() in base64.b64decode(padded.replace("-", "+").replace("_", "/")):
                return True
        except (binascii.Error, ValueError):
            continue
    return False


@pytest.mark.parametrize("user", ["a", "ab", "abc", "abcd", "someuser", "api"])
def test_it_redacts_basic_auth_of_user_and_value(user):
    value = "s3cr3t-value"
    header = "Basic " + base64.b64encode(f"{user}:{value}".encode()).decode()
    assert _value_recoverable(header, value)  # the check below can fail
    out = redact({"Authorization": header}, [value])["Authorization"]
    assert out.startswith("Basic ") and REDACTED in out
    assert not _value_recoverable(out, value)


def test_it_redacts_plain_base64_of_the_value():
    value = "another-secret-value"
    encoded = base64.b64encode(value.encode()).decode()
    assert encoded not in redact(f"payload={encoded}", [value])


def test_it_leaves_text_without_secrets_alone():
    text = "nothing to see here: aGVsbG8gd29ybGQ="  # base64 of "hello world"
    assert redact(text, ["unrelated-secret"]) == text
    assert redact(text, []) == text


def test_empty_values_are_ignored():
    assert redact("abc", [""]) == "abc"
    assert not Redactor([""])


def test_a_remembered_string_is_masked_the_same_and_the_memory_stays_bounded():
    from engine import redact

    redactor = Redactor(["agentclash-canary-tool-9f2b71a4c8"])
    leaked = "it is agentclash-canary-tool-9f2b71a4c8, see"
    assert redactor.text(leaked) == redactor.text(leaked) == "it is [redacted], see"
    assert redactor.detect(leaked) == redactor.detect(leaked) == "raw"
    for n in range(redact._MEMO_SIZE + 10):
        redactor.text(f"ordinary {n}")
    assert len(redact._MASKED) <= redact._MEMO_SIZE
    assert redactor.text(leaked) == "it is [redacted], see"
    long_text = "x" * (redact._MEMO_CHARS + 1) + " agentclash-canary-tool-9f2b71a4c8"
    assert "[redacted]" in redactor.text(long_text) and (redactor._memo_id, long_text) not in redact._MASKED
    other = Redactor(["another-value-7d1e0c9b8a"])  # other values: what the first remembered is not theirs
    assert other.text(leaked) == leaked and other.detect(leaked) == ""
