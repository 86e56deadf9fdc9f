"""The Redis broker's channel keeps one client for its commands (agentclash/broker.py)."""

from __future__ import annotations

import uuid
from queue import Empty

import pytest
from kombu import Connection
from kombu.transport import redis as kombu_redis

from agentclash import broker
from conftest import require_or_skip

REDIS_URL = "redis://127.0.0.1:6379/14"  # a private database number; queue names are unique per test


@pytest.fixture
def channel():
    import redis

    try:
        available = bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        available = False
    require_or_skip(available, "Redis at 127.0.0.1:6379")
    with Connection(REDIS_URL) as connection:
        yield connection.default_channel


@pytest.fixture
def queue_name(channel):
    import redis

    name = f"test-broker-{uuid.uuid4().hex[:8]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    client.delete(*client.keys(f"*{name}*"), name)


@pytest.fixture
def clients_built(monkeypatch):
    built: list[object] = []
    real = kombu_redis.Channel._create_client

    def counting(self, asynchronous=False):
        client = real(self, asynchronous=asynchronous)
        built.append(client)
        return client

    monkeypatch.setattr(kombu_redis.Channel, "_create_client", counting)
    return built


def test_redis_urls_use_the_client_reusing_transport(channel):
    assert isinstance(channel, broker.RedisChannel)


def test_publishes_share_one_client_and_every_message_arrives(channel, queue_name, clients_built):
    for number in range(3):
        channel._put(queue_name, {"body": f"message {number}", "headers": {}})
    assert len(clients_built) == 1  # kombu's own channel built one per publish
    assert channel._size(queue_name) == 3
    assert [channel._get(queue_name)["body"] for _ in range(3)] == ["message 0", "message 1", "message 2"]
    with pytest.raises(Empty):
        channel._get(queue_name)


def test_the_client_follows_the_channels_new_pool_after_a_fork(channel, queue_name, clients_built):
    channel._put(queue_name, {"body": "before", "headers": {}})
    old_pool = channel.pool
    channel._after_fork()  # what kombu runs in a forked child: the parent's connections are dropped
    channel._put(queue_name, {"body": "after", "headers": {}})
    assert len(clients_built) == 2
    assert clients_built[-1].connection_pool is channel.pool is not old_pool
    assert [channel._get(queue_name)["body"] for _ in range(2)] == ["before", "after"]


def test_a_consumed_message_is_acked_and_a_rejected_one_requeued(channel, queue_name):
    # The acks and restores of kombu's Redis QoS go through the shared client too.
    with Connection(REDIS_URL) as connection:
        simple = connection.SimpleQueue(queue_name)
        simple.put({"n": 1})
        simple.put({"n": 2})
        simple.get(timeout=5).reject(requeue=True)
        received = []
        for _ in range(2):
            message = simple.get(timeout=5)
            received.append(message.payload["n"])
            message.ack()
        assert sorted(received) == [1, 2]
        with pytest.raises(simple.Empty):
            simple.get(timeout=0.2)
        simple.close()


def test_a_lower_priority_number_comes_out_first_on_redis_too(channel, queue_name):
    """The same order as the filesystem broker's (fair scheduling, docs/operations.md)."""
    for number in range(3):
        channel._put(queue_name, {"body": f"busy {number}", "headers": {}, "properties": {"priority": 6}})
    channel._put(queue_name, {"body": "new", "headers": {}, "properties": {"priority": 0}})
    bodies = [channel._get(queue_name)["body"] for _ in range(4)]
    assert bodies == ["new", "busy 0", "busy 1", "busy 2"]


def test_a_chain_sees_a_message_waiting_ahead_of_its_kept_case_on_redis(channel, queue_name):
    channel._put(queue_name, {"body": "busy", "headers": {}, "properties": {"priority": 6}})
    assert not channel.waiting_ahead(queue_name, 6)
    channel._put(queue_name, {"body": "new", "headers": {}, "properties": {"priority": 0}})
    assert channel.waiting_ahead(queue_name, 6) and not channel.waiting_ahead(queue_name, 0)
    assert channel._get(queue_name)["body"] == "new"
    assert not channel.waiting_ahead(queue_name, 6)
