"""The process-wide backends sessions share: one per mode and preload set, closed on demand, none
after a fork."""

from __future__ import annotations

import os

from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.backends.registry import SharedBackends


class _Counting:
    def __init__(self) -> None:
        self.made: list[tuple[str, int | None]] = []
        self.preloads: list[tuple[str, ...]] = []
        self.closed: list[str] = []
        self.closed_ids: list[int] = []

    def __call__(
        self, mode: str, pool_size: int | None = None, preload: tuple[str, ...] = ()
    ) -> FakeBackend:
        self.made.append((mode, pool_size))
        self.preloads.append(preload)
        counting = self

        class Closing(FakeBackend):
            def close(self) -> None:
                counting.closed.append(mode)
                counting.closed_ids.append(id(self))

        return Closing(not_executed)


def test_one_backend_per_mode_made_on_first_use_with_the_pool_size() -> None:
    make = _Counting()
    shared = SharedBackends(make, pool_size=2)
    first = shared.get("fake")
    assert shared.get("fake") is first
    shared.get("other")
    assert make.made == [("fake", 2), ("other", 2)]
    assert shared.close() == []
    assert sorted(make.closed) == ["fake", "other"]
    assert shared.get("fake") is not first  # made again after close


def test_one_backend_per_preload_set_whatever_order_names_it() -> None:
    make = _Counting()
    shared = SharedBackends(make)
    plain = shared.get("native")
    data = shared.get("native", preload=("pandas", "numpy"))
    assert data is not plain
    assert shared.get("native", preload=("numpy", "pandas", "numpy")) is data
    assert shared.get("native", preload=()) is plain
    assert make.preloads == [(), ("numpy", "pandas")]
    assert shared.close() == [] and sorted(make.closed) == ["native", "native"]


def test_a_forked_child_starts_with_none_and_never_closes_the_parents() -> None:
    make = _Counting()
    shared = SharedBackends(make)
    parent = shared.get("fake")
    os.register_at_fork(after_in_child=shared._after_fork_in_child)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it sees, then leave without cleanup
        os.close(read)
        fresh = shared.get("fake") is not parent
        parents_untouched = shared.close() == [] and id(parent) not in make.closed_ids
        os.write(write, b"ok" if fresh and parents_untouched else b"no")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 2)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"ok"
    assert shared.get("fake") is parent and make.closed == []
