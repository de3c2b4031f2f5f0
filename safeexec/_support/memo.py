"""A bounded, thread-safe least-recently-used cache: the one home of in-process memoisation.

The static gate caches decisions by code digest and policy, and the restricted executor its
compiled cells by code, each in one :class:`BoundedCache`. A cache never decides anything itself:
its key must hold every input that changes the cached value (the caller's tests prove each).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from safeexec.model.fieldwise import Fieldwise

__all__ = ["BoundedCache", "CacheStatistics"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CacheStatistics(Fieldwise):
    """Counts since the cache was made (or last cleared); ``entries`` and ``size`` are now."""

    hits: int
    misses: int
    entries: int
    size: int


class BoundedCache(Generic[K, V]):
    """At most ``max_entries`` values (never None) of total ``size`` at most ``max_size``.

    A lookup refreshes its entry; a store evicts the least recently used until both bounds
    hold. ``size`` is the caller's measure of a value (e.g. its source's length); a value larger
    than ``max_size`` is not stored.
    """

    def __init__(self, *, max_entries: int, max_size: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries={max_entries!r} must be at least 1")
        if max_size < 1:
            raise ValueError(f"max_size={max_size!r} must be at least 1")
        self._max_entries = max_entries
        self._max_size = max_size
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def get(self, key: K) -> V | None:
        """The value stored under ``key``, or None (counted as a miss)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return entry[0]

    def put(self, key: K, value: V, *, size: int) -> None:
        """Store ``value`` under ``key``, evicting least recently used entries to fit."""
        if size > self._max_size:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= old[1]
            self._entries[key] = (value, size)
            self._size += size
            while len(self._entries) > self._max_entries or self._size > self._max_size:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._size -= evicted

    def clear(self) -> None:
        """Drop every entry and reset the counts."""
        with self._lock:
            self._entries.clear()
            self._size = self._hits = self._misses = 0

    def statistics(self) -> CacheStatistics:
        with self._lock:
            return CacheStatistics(
                hits=self._hits, misses=self._misses, entries=len(self._entries), size=self._size
            )
