"""The embedded filesystem broker never hands a consumer a half-written message (agentclash/broker.py)."""

from __future__ import annotations

import os
from queue import Empty

import pytest
from kombu import Connection

from agentclash import broker


@pytest.fixture
def channels(tmp_path):
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path)}
    with (
        Connection("filesystem://", transport_options=options) as producer,
        Connection("filesystem://", transport_options=options) as consumer,
    ):
        yield producer.default_channel, consumer.default_channel


def test_filesystem_urls_use_the_atomic_transport(channels):
    producer, _ = channels
    assert isinstance(producer, broker.Channel)


def test_a_consumer_polling_while_a_message_is_written_sees_nothing_then_the_whole_message(channels, monkeypatch):
    producer, consumer = channels
    payload = {"body": "x" * 200_000, "headers": {}}
    seen_mid_write = []
    real = broker.str_to_bytes

    def write_while_consumer_polls(text):
        # The message's file is open at this point; a consumer polling now must not get it.
        try:
            seen_mid_write.append(consumer._get("runs"))
        except Empty:
            seen_mid_write.append(None)
        return real(text)

    monkeypatch.setattr(broker, "str_to_bytes", write_while_consumer_polls)
    producer._put("runs", payload)
    assert seen_mid_write == [None]
    assert consumer._get("runs") == payload
    with pytest.raises(Empty):
        consumer._get("runs")
    assert not [name for name in os.listdir(producer.data_folder_out) if name.startswith("partial-")]


def test_messages_published_within_one_millisecond_come_out_in_publish_order(channels):
    producer, consumer = channels
    for number in range(50):  # well within a millisecond or two: the old prefix tied them all
        producer._put("runs", {"body": str(number), "headers": {}})
    assert [consumer._get("runs")["body"] for _ in range(50)] == [str(n) for n in range(50)]


def test_a_lower_priority_number_comes_out_first_then_publish_order(channels):
    """Fair scheduling (docs/operations.md): a busy workspace's cases go out at priority 6 or 9, a
    new one's at 0; the consumer takes the 0 first, whatever was published before it."""
    producer, consumer = channels
    for number in range(3):
        producer._put("runs", {"body": f"busy {number}", "headers": {}, "properties": {"priority": 6}})
    producer._put("runs", {"body": "new", "headers": {}, "properties": {"priority": 0}})
    producer._put("runs", {"body": "plain", "headers": {}})  # no priority: 0, after the one before it
    bodies = [consumer._get("runs")["body"] for _ in range(5)]
    assert bodies == ["new", "plain", "busy 0", "busy 1", "busy 2"]


def test_a_chain_sees_a_message_waiting_ahead_of_its_kept_case(channels):
    producer, consumer = channels
    producer._put("runs", {"body": "busy", "headers": {}, "properties": {"priority": 6}})
    assert not consumer.waiting_ahead("runs", 6)  # same priority: the chain may go on
    producer._put("runs", {"body": "new", "headers": {}, "properties": {"priority": 0}})
    assert consumer.waiting_ahead("runs", 6) and not consumer.waiting_ahead("runs", 0)
    assert not consumer.waiting_ahead("other", 6)  # another queue's messages are not this worker's
    assert consumer._get("runs")["body"] == "new"
    assert not consumer.waiting_ahead("runs", 6)
