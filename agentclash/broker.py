"""Kombu's filesystem transport with atomic message files (the embedded default broker).

Kombu's own ``_put`` opens the final ``<time>_<uuid>.<queue>.msg`` name and then writes into it,
while a consumer's ``_get`` lists the folder, moves any matching file away and reads it. A consumer
polling at the same moment (two workers on one queue, or the short poll interval) can take a file
that is still empty or half written and die on ``JSONDecodeError``. Here the message is written in
full under a name no queue matches and then renamed into place: ``os.replace`` within one folder is
atomic, so a consumer sees either no file or the whole message.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]  # kombu's filesystem._put takes **kwargs too
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
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


class Transport(filesystem.Transport):
    Channel = Channel


def install() -> None:
    """Make ``filesystem://`` broker URLs use this transport (idempotent)."""
    TRANSPORT_ALIASES["filesystem"] = "agentclash.broker:Transport"
