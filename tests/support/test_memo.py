"""BoundedCache: least recently used eviction under an entry count and a total size."""

from __future__ import annotations

import pytest

from safeexec._support.memo import BoundedCache


def test_a_stored_value_is_found_and_counted_as_a_hit() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=2, max_size=100)
    assert cache.get("a") is None
    cache.put("a", 1, size=1)
    assert cache.get("a") == 1
    stats = cache.statistics()
    assert (stats.hits, stats.misses, stats.entries, stats.size) == (1, 1, 1, 1)


def test_the_least_recently_used_entry_is_evicted_first() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=2, max_size=100)
    cache.put("a", 1, size=1)
    cache.put("b", 2, size=1)
    assert cache.get("a") == 1  # refreshes "a": "b" is now the oldest
    cache.put("c", 3, size=1)
    assert cache.get("b") is None
    assert cache.get("a") == 1 and cache.get("c") == 3


def test_the_total_size_is_bounded_and_an_oversized_value_is_not_stored() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=10, max_size=10)
    cache.put("a", 1, size=6)
    cache.put("b", 2, size=6)
    assert cache.get("a") is None and cache.get("b") == 2
    cache.put("huge", 3, size=11)
    assert cache.get("huge") is None and cache.get("b") == 2
    cache.put("b", 4, size=3)  # replacing an entry replaces its size
    assert cache.statistics().size == 3


def test_clear_drops_entries_and_counts() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=2, max_size=10)
    cache.put("a", 1, size=1)
    cache.get("a")
    cache.clear()
    assert cache.get("a") is None
    assert cache.statistics().hits == 0


@pytest.mark.parametrize(
    "bounds", [{"max_entries": 0, "max_size": 1}, {"max_entries": 1, "max_size": 0}]
)
def test_bounds_below_one_are_refused(bounds: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        BoundedCache(**bounds)
