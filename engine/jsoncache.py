"""JSON text of a read-only object, encoded once per object (docs/performance.md).

A pack's manifest is loaded once per worker process and shared, unchanged, by every case of the
pack (``packs.manifests.pack_manifest``), yet each case put its visible part into the first user
message and a staged context file, as ``indent=2`` JSON: Python's pure-Python encoder, about
2 ms a case for a small pack. :class:`DumpCache` keeps the text per object, by identity (the entry
holds the object, so its id cannot be reused while cached).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class DumpCache(Generic[T]):
    """``dump(obj)`` once per object (by identity), for the ``size`` objects used last."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.items: OrderedDict[int, tuple[Any, T]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, obj: Any, dump: Callable[[Any], T]) -> T:
        key = id(obj)
        with self.lock:
            hit = self.items.get(key)
            if hit is not None and hit[0] is obj:
                self.items.move_to_end(key)
                return hit[1]
        text = dump(obj)
        with self.lock:
            self.items[key] = (obj, text)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return text


def slot() -> str:
    """A placeholder string no pack or agent can know (to splice a cached text into a larger dump)."""
    return f"agentclash-slot-{uuid.uuid4().hex}"
