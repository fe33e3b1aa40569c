"""A bounded store of Delta reads by an exact key, shared by the threads of an application.

A read of a table version at a key that names its content exactly (path, Delta table id,
version...) can be handed to any later reader: the first one stored for a key is kept (any other
made meanwhile reads the same rows), and the least recently used go once there are too many.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from threading import Lock


class ReadStore:
    """At most `most` reads, by key; safe to use from several threads."""

    def __init__(self, most: int) -> None:
        self._most = most
        self._lock = Lock()
        self._reads: OrderedDict[Hashable, object] = OrderedDict()

    def get(self, key: Hashable):
        """The read kept for `key`, or None."""
        with self._lock:
            df = self._reads.get(key)
            if df is not None:
                self._reads.move_to_end(key)
            return df

    def keep(self, key: Hashable, df):
        """The read kept for `key`: `df` unless one was kept before it."""
        with self._lock:
            kept = self._reads.setdefault(key, df)
            self._reads.move_to_end(key)
            while len(self._reads) > self._most:
                self._reads.popitem(last=False)
            return kept

    def clear(self) -> None:
        with self._lock:
            self._reads.clear()
