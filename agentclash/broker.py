"""Our kombu transports: the embedded filesystem broker's atomic message files, and Redis without
a new client object per command.

**Filesystem.** A message's file name starts with its priority (0 to 9), so consumers, which take
files in name order, take a lower priority first (fair scheduling: docs/operations.md). Kombu's own ``_put`` opens the final ``<time>_<uuid>.<queue>.msg`` name and then
writes into it, while a consumer's ``_get`` lists the folder, moves any matching file away and
reads it. A consumer polling at the same moment (two workers on one queue, or the short poll
interval) can take a file that is still empty or half written and die on ``JSONDecodeError``.
Here the message is written in full under a name no queue matches and then renamed into place:
``os.replace`` within one folder is atomic, so a consumer sees either no file or the whole
message.

**Redis.** Kombu's Redis channel builds a new ``redis.Redis`` object for every publish (and every
ack, size or binding command): its ``__init__`` copies redis-py's 170 response callbacks into a
case-insensitive dict, which cost more CPU than the ``LPUSH`` it was built for (docs/performance.md,
"Publishing a case"). The channel here keeps one such client over the channel's connection pool,
the same pool kombu's throwaway clients used; a command still takes a connection from the pool and
gives it back, as before, so the client is safe to share between threads. It is rebuilt whenever
the channel replaces its pool (after a fork, on close).
"""

from __future__ import annotations

import itertools
import os
import uuid
from contextlib import nullcontext
from time import monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

_sequence = itertools.count()


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]  # kombu's filesystem._put takes **kwargs too
        # Consumers take files in name order: the message's priority first (0 before 9, as on
        # Redis: runs/queue.py), then the clock in ns (and this process's own count for two puts
        # within one tick) keeps messages in publish order, as kombu's own millisecond prefix did
        # not (a run's first cases, published within one millisecond, came out in uuid order, so
        # one lane could take every worker slot first).
        priority = self._get_message_priority(payload, reverse=False)
        name = f"{priority}{monotonic_ns():020d}_{next(_sequence):010d}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f"partial-{uuid.uuid4().hex}")  # matches no queue
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def waiting_ahead(self, queue: str, priority: int) -> bool:
        """Whether a message of a lower priority number than ``priority`` waits in ``queue`` (a
        chain of cases yields to it: runs/tasks.py); one listing of the folder."""
        suffix = f".{queue}.msg"
        try:
            names = os.listdir(self.data_folder_in)
        except OSError:
            return False
        return any(name[:1].isdigit() and int(name[0]) < priority and name.endswith(suffix) for name in names)


class Transport(filesystem.Transport):
    Channel = Channel


class RedisChannel(kombu_redis.Channel):
    _shared_client: Any = None

    def conn_or_acquire(self, client: Any = None) -> nullcontext[Any]:  # type: ignore[override]  # kombu's is a generator context manager
        if client:
            return nullcontext(client)
        shared = self._shared_client
        pool = self.pool  # a new pool after a fork or a close: the client must follow it
        if shared is None or shared.connection_pool is not pool:
            shared = self._shared_client = self._create_client()
        return nullcontext(shared)

    def waiting_ahead(self, queue: str, priority: int) -> bool:
        """Whether a message of a lower priority number than ``priority`` waits in ``queue``: one
        ``LLEN`` per priority list ahead of it (kombu keeps one list per priority step)."""
        keys = {self._q_for_pri(queue, step) for step in self.priority_steps if step < priority}
        if not keys:
            return False
        with self.conn_or_acquire() as client, client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.llen(key)
            return any(int(length or 0) for length in pipe.execute())

    def _disconnect_pools(self) -> None:
        self._shared_client = None
        super()._disconnect_pools()


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel


def install() -> None:
    """Make ``filesystem://`` and ``redis://`` / ``rediss://`` broker URLs use these transports (idempotent)."""
    TRANSPORT_ALIASES["filesystem"] = "agentclash.broker:Transport"
    TRANSPORT_ALIASES["redis"] = "agentclash.broker:RedisTransport"
    TRANSPORT_ALIASES["rediss"] = "agentclash.broker:RedisTransport"
