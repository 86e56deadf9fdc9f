"""An event's payload is encoded once: by the emitter's JSON check, reused by the store when unchanged."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from engine.events import EventEmitter
from engine.redact import Redactor
from engine.types import EVENT_SCHEMA_VERSION
from runs.events import events_prepare

PAYLOADS = [
    {},
    {"text": 'héllo \u2028 "quoted"', "n": 1.5, "nested": {"list": [1, None, True]}},
    {"schema_version": "older", "x": 1},
    {"when": dt.datetime(2026, 1, 2, 3, 4, 5), "obj": object.__name__},  # not JSON-safe: str fallback
]


def _emitted(payload: dict, case_key: str = "case-a") -> list:
    events: list = []
    EventEmitter(events.append, prefix="p", source="s", case_key=case_key).emit("demo.event", payload)
    return events


@pytest.mark.django_db
@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("case_key", ["case-a", ""])
def test_the_stored_text_is_the_payload_encoded(payload, case_key):
    for event in _emitted(payload, case_key):
        prepared = events_prepare(lane_id=1, events=[event])[0]
        expected = dict(event.payload)
        expected.setdefault("schema_version", EVENT_SCHEMA_VERSION)
        assert prepared.text == json.dumps(expected, separators=(",", ":"), default=str)
        assert json.loads(prepared.text) == prepared.payload == json.loads(json.dumps(expected, default=str))


@pytest.mark.django_db
def test_a_redacted_payload_is_encoded_again():
    event = _emitted({"output": "the key is s3cr3t-value-123"})[-1]
    assert "s3cr3t-value-123" in event.payload_json
    prepared = events_prepare(lane_id=1, events=[event], redactor=Redactor(["s3cr3t-value-123"]))[0]
    assert "s3cr3t-value-123" not in prepared.text and "[redacted]" in prepared.text
