"""The limiter on Redis (used when the Celery broker is Redis): one Lua script per decision.

Per provider account, three sorted sets, scored in milliseconds of Redis's own clock (so workers'
clocks need not agree): ``calls`` (token → lease expiry: the concurrency slots held), ``requests``
(token → start: the requests-per-minute window) and ``tokens`` (``token:count`` → end: the
tokens-per-minute window). A script runs atomically, so checking and taking a slot is one step.
Expired leases (a killed worker's) are dropped before every check; every key expires on its own
once idle.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import redis

from runs.throttle.base import WINDOW_SECONDS, Decision, LimiterUnavailable

if TYPE_CHECKING:
    from runs.throttle import Limits

SLOT_POLL_SECONDS = 0.1

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

ACQUIRE = (
    _NOW
    + """
local window, lease = tonumber(ARGV[6]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
local max_calls, rpm, tpm = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if max_calls > 0 and redis.call('ZCARD', KEYS[1]) >= max_calls then
  return {0, 'max_concurrent_calls', 0}
end
if rpm > 0 and redis.call('ZCARD', KEYS[2]) >= rpm then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {0, 'requests_per_minute', tonumber(oldest[2]) + window - now}
end
if tpm > 0 then
  local used = 0
  local entries = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    used = used + (tonumber(string.match(entries[i], ':(%d+)$')) or 0)
  end
  if used >= tpm then
    return {0, 'tokens_per_minute', tonumber(entries[2]) + window - now}
  end
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('ZADD', KEYS[2], now, ARGV[1])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], window + lease) end
return {1, '', 0}
"""
)

RELEASE = (
    _NOW
    + """
redis.call('ZREM', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[1] .. ':' .. ARGV[2])
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
end
return 1
"""
)


class RedisLimiter:
    name = "redis"

    def __init__(self, url: str, *, prefix: str = "agentclash:throttle", client: Any = None) -> None:
        self.prefix = prefix
        self.client = client or redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._acquire = self.client.register_script(ACQUIRE)
        self._release = self.client.register_script(RELEASE)

    def keys(self, account_id: int) -> list[str]:
        # One hash tag per account keeps its keys in one slot of a Redis Cluster.
        return [f"{self.prefix}:{{{account_id}}}:{kind}" for kind in ("calls", "requests", "tokens")]

    def try_acquire(self, *, account_id: int, limits: Limits, lease_seconds: float) -> Decision:
        token = uuid.uuid4().hex
        args: list[str | int] = [
            token,
            int(lease_seconds * 1000),
            limits.max_concurrent_calls or 0,
            limits.requests_per_minute or 0,
            limits.tokens_per_minute or 0,
            int(WINDOW_SECONDS * 1000),
        ]
        try:
            granted, limit, retry_ms = self._acquire(keys=self.keys(account_id), args=args)
        except (redis.RedisError, OSError) as exc:
            raise LimiterUnavailable(f"redis: {exc}") from exc
        if granted:
            return Decision(token=token)
        name = limit.decode() if isinstance(limit, bytes) else str(limit)
        return Decision(limit=name, limit_value=limits.value(name) or 0, retry_in=max(SLOT_POLL_SECONDS, int(retry_ms) / 1000))

    def release(self, *, account_id: int, token: str, tokens: int) -> None:
        calls, _requests, used = self.keys(account_id)
        try:
            self._release(keys=[calls, used], args=[token, max(0, int(tokens)), int(WINDOW_SECONDS * 1000) * 2])
        except (redis.RedisError, OSError) as exc:
            raise LimiterUnavailable(f"redis: {exc}") from exc
