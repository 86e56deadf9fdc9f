"""engine.redact: the forms of a secret value that never leave the engine, and values split across events."""

from __future__ import annotations

import base64
import codecs
import json
import urllib.parse

import pytest

from engine.redact import MIN_DERIVED, REDACTED, Redactor, StreamRedactor

VALUE = "tok-9f8e7d6C5b4a"
OTHER = "Zq81-pLm0-xYw2"


def spaced(value: str, sep: str) -> str:
    return sep.join(value)


FORMS = {
    "raw": VALUE,
    "hex lower": VALUE.encode().hex(),
    "hex upper": VALUE.encode().hex().upper(),
    "hex spaced": " ".join(f"{b:02x}" for b in VALUE.encode()),
    "hex \\x escapes": "".join(f"\\x{b:02x}" for b in VALUE.encode()),
    "reversed": VALUE[::-1],
    "case-swapped": VALUE.swapcase(),
    "upper": VALUE.upper(),
    "spaced": spaced(VALUE, " "),
    "dashed": spaced(VALUE, "-"),
    "newlines and NULs": spaced(VALUE, "\n\x00"),
    "zero-width spaces": spaced(VALUE, "\u200b"),
    "JSON \\u escapes": "".join(f"\\u{ord(c):04x}" for c in VALUE),
    "JSON \\u escapes, upper hex": "".join(f"\\u{ord(c):04X}" for c in VALUE),
    "URL-encoded, every byte": "".join(f"%{b:02X}" for b in VALUE.encode()),
    "URL-encoded, quote_plus": urllib.parse.quote_plus(VALUE),
    "base64": base64.b64encode(VALUE.encode()).decode(),
    "base64 Basic user:value": base64.b64encode(f"alice:{VALUE}".encode()).decode(),
    "base64 of UTF-16": base64.b64encode(VALUE.encode("utf-16-le")).decode(),
    "base32": base64.b32encode(VALUE.encode()).decode(),
    "base32 lower, unpadded": base64.b32encode(VALUE.encode()).decode().lower().rstrip("="),
    "base32 inside a longer text": base64.b32encode(f"user={VALUE};".encode()).decode(),
    "rot13": codecs.encode(VALUE, "rot13"),
    "UTF-16 read as text": VALUE.encode("utf-16-le").decode("latin-1"),
    "reversed and spaced": spaced(VALUE[::-1], " "),
}


@pytest.mark.parametrize("name", list(FORMS))
def test_every_form_is_redacted_in_text(name):
    text = f"before {FORMS[name]} after"
    out = Redactor([VALUE]).text(text)
    assert REDACTED in out, name
    assert out.startswith("before ") and out.endswith(" after")
    assert FORMS[name] not in out


@pytest.mark.parametrize("name", list(FORMS))
def test_every_form_is_redacted_inside_json_documents(name):
    doc = {"result": {"content": json.dumps({"echo": FORMS[name]})}, "list": [FORMS[name]]}
    out = json.dumps(Redactor([VALUE]).json(doc))
    assert FORMS[name] not in out and json.dumps(FORMS[name])[1:-1] not in out


def test_only_the_value_is_replaced_not_its_neighbours():
    out = Redactor([VALUE]).text(f"key={spaced(VALUE, ' ')}; next=1 and {VALUE.encode().hex()}, done")
    assert out == f"key={REDACTED}; next=1 and {REDACTED}, done"


def test_text_without_a_secret_is_left_alone():
    text = "The quick brown fox — 0x1f, %20, \\u00e9, aGVsbG8=, MZXW6YTBOI======, deadbeef, s e c r e t"
    assert Redactor([VALUE, OTHER]).text(text) == text


def test_short_values_only_mask_their_exact_forms():
    short = "abc12"
    assert len(short) < MIN_DERIVED
    assert Redactor([short]).text("x abc12 y 21cba z a-b-c-1-2") == f"x {REDACTED} y 21cba z a-b-c-1-2"


def test_every_secret_of_several_is_redacted():
    out = Redactor([VALUE, OTHER]).text(f"{VALUE[::-1]} / {OTHER.encode().hex()} / {spaced(OTHER, '.')}")
    assert out == f"{REDACTED} / {REDACTED} / {REDACTED}"


def test_a_large_text_with_a_hidden_form_far_in_is_redacted():
    filler = "lorem ipsum dolor sit amet, " * 2000
    out = Redactor([VALUE]).text(filler + spaced(VALUE, "-") + filler)
    assert out == filler + REDACTED + filler


# -- values split across consecutive events ---------------------------------------------------


def run(stream: StreamRedactor, *texts: str, field: str = "text_delta", event_type: str = "model.output.delta") -> list[str]:
    return [stream.payload(event_type, {field: t, "case_key": "c1"})[field] for t in texts]


@pytest.mark.parametrize("cut", [1, 3, 5, 6, 8, 10, len(VALUE) - 1])
def test_a_value_split_across_two_events_is_masked(cut):
    first, second = run(StreamRedactor(Redactor([VALUE])), f"the key is {VALUE[:cut]}", f"{VALUE[cut:]} and more")
    assert second == f"{REDACTED} and more"
    folded_prefix = sum(c.isalnum() for c in VALUE[:cut])
    if folded_prefix >= MIN_DERIVED:
        assert first == f"the key is {REDACTED}"  # masked as it arrives: the next event may complete it
    else:
        assert first == f"the key is {VALUE[:cut]}"  # a fragment too short to recognise stays
    assert not second.startswith(VALUE[cut:])


def test_a_value_split_over_many_events_leaves_at_most_a_short_prefix():
    value = VALUE
    parts = [value[i : i + 3] for i in range(0, len(value), 3)]
    out = run(StreamRedactor(Redactor([value])), *parts)
    visible = "".join(p for p in out if p != REDACTED)
    assert sum(c.isalnum() for c in visible) < MIN_DERIVED


def test_split_encoded_forms_are_masked_too():
    hexed = VALUE.encode().hex()
    out = run(StreamRedactor(Redactor([VALUE])), "dump: " + hexed[:20], hexed[20:] + " end")
    assert out == [f"dump: {REDACTED}", f"{REDACTED} end"]
    out = run(StreamRedactor(Redactor([VALUE])), "a " + spaced(VALUE[:4], " "), spaced(VALUE[4:], " ") + " b")
    assert out[1] == f"{REDACTED} b" and VALUE[4:] not in "".join(out)


def test_the_rest_of_a_value_begun_at_a_fields_end_is_masked_in_any_later_field():
    stream = StreamRedactor(Redactor([VALUE]))
    first = stream.payload("tool.call.completed", {"result": {"content": f"x {VALUE[:10]}"}})
    assert first["result"]["content"] == f"x {REDACTED}"  # the start, masked at once
    unrelated = stream.payload("tool.call.completed", {"tool_name": "read_file"})
    assert unrelated["tool_name"] == "read_file"
    rest = stream.payload("tool.call.started", {"arguments": {"url": f"https://h.test/?q={VALUE[10:]}"}})
    assert rest["arguments"]["url"] == f"https://h.test/?q={REDACTED}"  # another field, another event
    assert VALUE[10:] not in json.dumps(rest)


def test_a_values_random_part_alone_is_masked_in_any_field():
    stream = StreamRedactor(Redactor([VALUE]))
    out = stream.payload("tool.call.completed", {"tool_name": VALUE[4:]})  # tok-9f8e7d6C5b4a: the part from its first digit
    assert out["tool_name"] == REDACTED


def test_ordinary_streams_are_untouched():
    stream = StreamRedactor(Redactor([VALUE, OTHER]))
    texts = ["Hello", " world,", " tok-", "en counts: 9f", "8e"]
    assert run(stream, *texts) == texts


def test_a_value_split_across_two_tool_results_is_masked_inside_their_json():
    stream = StreamRedactor(Redactor([VALUE]))

    def completed(body: str) -> dict:
        content = json.dumps({"content": {"status_code": 200, "body": body, "body_bytes": len(body)}}, separators=(",", ":"))
        return stream.payload("tool.call.completed", {"tool_name": "api", "result": {"content": content, "is_error": False}})

    first = completed(VALUE[:8])
    second = completed(VALUE[8:])
    bodies = [json.loads(e["result"]["content"])["content"]["body"] for e in (first, second)]
    assert bodies == [REDACTED, REDACTED]
    assert json.loads(first["result"]["content"])["content"]["body_bytes"] == 8  # the rest of the document is kept


def test_redaction_keeps_the_old_guarantees():
    redactor = Redactor(["secretABC", "ABCsecret2"])
    out = redactor.text("secretABCsecret2")
    assert "secret" not in out.replace(REDACTED, "")
    assert Redactor(["abc", "abcdef"]).text("x abcdef y abc z") == f"x {REDACTED} y {REDACTED} z"
    assert Redactor(["sk-key-as-key"]).json({"sk-key-as-key": 1}) == {REDACTED: 1}
    assert Redactor([""]).text("abc") == "abc" and not Redactor([""])


def test_hostile_payload_shapes_do_not_break_the_stream():
    stream = StreamRedactor(Redactor([VALUE]))
    deep = "[" * 50_000 + "]" * 50_000
    assert stream.payload("tool.call.completed", {"result": {"content": deep}})["result"]["content"] == deep
    huge_key = {"k" * 100_000: f"x {VALUE}"}
    assert stream.payload("tool.call.completed", {"arguments": huge_key})["arguments"] == {"k" * 100_000: f"x {REDACTED}"}
    assert stream.payload("e", {"t": "[redacted]"}) == {"t": "[redacted]"}
