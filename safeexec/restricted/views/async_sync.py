"""The synchronization primitives and queues of the restricted ``asyncio`` view: ``Lock``,
``Event``, ``Semaphore``, ``BoundedSemaphore``, ``Condition``, ``Queue`` (and its LIFO and
priority kinds), over the view's own futures (``async_loop.py``)."""

from __future__ import annotations

import collections
import heapq
from typing import Any

from safeexec.restricted.views.async_loop import (
    CancelledError,
    Future,
    _Final,
    _require_loop,
)

__all__ = [
    "BoundedSemaphore",
    "Condition",
    "Event",
    "LifoQueue",
    "Lock",
    "PriorityQueue",
    "Queue",
    "QueueEmpty",
    "QueueFull",
    "Semaphore",
]


class QueueEmpty(Exception):
    """``get_nowait`` on an empty queue."""


class QueueFull(Exception):
    """``put_nowait`` on a full queue."""


def _wake_first(waiters: collections.deque[Future]) -> bool:
    """Wake the first waiter still waiting; False when there is none."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False


async def _wait(waiters: collections.deque[Future]) -> None:
    waiter = _require_loop(None).create_future()
    waiters.append(waiter)
    try:
        await waiter
    finally:
        if waiter in waiters:
            waiters.remove(waiter)


class _ContextManagerMixin(_Final):
    __slots__ = ()

    async def __aenter__(self) -> None:
        await self.acquire()  # type: ignore[attr-defined]

    async def __aexit__(self, *exc: object) -> None:
        self.release()  # type: ignore[attr-defined]


class Lock(_ContextManagerMixin):
    """``asyncio.Lock``: ``async with lock:`` or ``await lock.acquire()`` … ``lock.release()``."""

    __slots__ = ("__weakref__", "_locked", "_waiters")

    def __init__(self) -> None:
        self._locked = False
        self._waiters: collections.deque[Future] = collections.deque()

    def __repr__(self) -> str:
        return f"<Lock {'locked' if self._locked else 'unlocked'}>"

    def locked(self) -> bool:
        return self._locked

    async def acquire(self) -> bool:
        # A woken waiter stays queued until it runs, so no newcomer takes the lock before it.
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return True
        waiter = _require_loop(None).create_future()
        self._waiters.append(waiter)
        try:
            try:
                await waiter
            finally:
                self._waiters.remove(waiter)
        except CancelledError:
            if not self._locked:
                self._wake_first_waiter()  # it may have been our turn: pass it on
            raise
        self._locked = True
        return True

    def release(self) -> None:
        if not self._locked:
            raise RuntimeError("Lock is not acquired.")
        self._locked = False
        self._wake_first_waiter()

    def _wake_first_waiter(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(True)
            return


class Event(_Final):
    """``asyncio.Event``: ``await event.wait()`` until some task calls ``event.set()``."""

    __slots__ = ("__weakref__", "_value", "_waiters")

    def __init__(self) -> None:
        self._value = False
        self._waiters: collections.deque[Future] = collections.deque()

    def __repr__(self) -> str:
        return f"<Event {'set' if self._value else 'unset'}>"

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(True)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        await _wait(self._waiters)
        return True


class Semaphore(_ContextManagerMixin):
    """``asyncio.Semaphore``: at most ``value`` holders at once."""

    __slots__ = ("__weakref__", "_value", "_waiters")

    def __init__(self, value: int = 1) -> None:
        if int(value) < 0:
            raise ValueError("Semaphore initial value must be >= 0")
        self._value = int(value)
        self._waiters: collections.deque[Future] = collections.deque()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} value={self._value}>"

    def locked(self) -> bool:
        return self._value == 0 or any(not w.done() for w in self._waiters)

    async def acquire(self) -> bool:
        while self._value <= 0:
            waiter = _require_loop(None).create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except CancelledError:
                if waiter.done() and not waiter.cancelled() and self._value > 0:
                    _wake_first(self._waiters)
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self._value -= 1
        return True

    def release(self) -> None:
        self._value += 1
        _wake_first(self._waiters)


class BoundedSemaphore(Semaphore):
    """``asyncio.BoundedSemaphore``: releasing more often than acquiring is an error."""

    __slots__ = ("_bound",)

    def __init__(self, value: int = 1) -> None:
        super().__init__(value)
        self._bound = int(value)

    def release(self) -> None:
        if self._value >= self._bound:
            raise ValueError("BoundedSemaphore released too many times")
        super().release()


class Condition(_ContextManagerMixin):
    """``asyncio.Condition``: ``wait`` releases the lock until ``notify``, then re-acquires it."""

    __slots__ = ("__weakref__", "_lock", "_waiters")

    def __init__(self, lock: Lock | None = None) -> None:
        if lock is not None and type(lock) is not Lock:
            raise TypeError("Condition takes a Lock of this asyncio view")
        self._lock = Lock() if lock is None else lock
        self._waiters: collections.deque[Future] = collections.deque()

    def locked(self) -> bool:
        return self._lock.locked()

    async def acquire(self) -> bool:
        return await self._lock.acquire()

    def release(self) -> None:
        self._lock.release()

    async def wait(self) -> bool:
        if not self._lock.locked():
            raise RuntimeError("cannot wait on un-acquired lock")
        self._lock.release()
        try:
            await _wait(self._waiters)
            return True
        finally:
            while True:
                try:
                    await self._lock.acquire()
                    break
                except CancelledError:
                    continue

    async def wait_for(self, predicate: Any) -> object:
        result = predicate()
        while not result:
            await self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        if not self._lock.locked():
            raise RuntimeError("cannot notify on un-acquired lock")
        woken = 0
        while woken < n and _wake_first(self._waiters):
            woken += 1

    def notify_all(self) -> None:
        self.notify(len(self._waiters))


class Queue(_Final):
    """``asyncio.Queue``: FIFO; ``maxsize`` > 0 makes ``put`` wait while it is full."""

    __slots__ = (
        "__weakref__",
        "_finished",
        "_getters",
        "_items",
        "_maxsize",
        "_putters",
        "_unfinished",
    )

    def __init__(self, maxsize: int = 0) -> None:
        self._maxsize = int(maxsize)
        self._items: Any = self._make_items()
        self._getters: collections.deque[Future] = collections.deque()
        self._putters: collections.deque[Future] = collections.deque()
        self._unfinished = 0
        self._finished = Event()
        self._finished.set()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} maxsize={self._maxsize} qsize={self.qsize()}>"

    # The three storage hooks the LIFO and priority kinds change.
    def _make_items(self) -> Any:
        return collections.deque()

    def _put(self, item: object) -> None:
        self._items.append(item)

    def _get(self) -> object:
        return self._items.popleft()

    @property
    def maxsize(self) -> int:
        return self._maxsize

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return 0 < self._maxsize <= self.qsize()

    def put_nowait(self, item: object) -> None:
        if self.full():
            raise QueueFull
        self._put(item)
        self._unfinished += 1
        self._finished.clear()
        _wake_first(self._getters)

    def get_nowait(self) -> object:
        if self.empty():
            raise QueueEmpty
        item = self._get()
        _wake_first(self._putters)
        return item

    async def put(self, item: object) -> None:
        while self.full():
            try:
                await _wait(self._putters)
            except CancelledError:
                if not self.full():
                    _wake_first(self._putters)
                raise
        self.put_nowait(item)

    async def get(self) -> object:
        while self.empty():
            try:
                await _wait(self._getters)
            except CancelledError:
                if not self.empty():
                    _wake_first(self._getters)
                raise
        return self.get_nowait()

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1
        if self._unfinished == 0:
            self._finished.set()

    async def join(self) -> None:
        if self._unfinished > 0:
            await self._finished.wait()


class LifoQueue(Queue):
    """``asyncio.LifoQueue``: the last item put is the first got."""

    __slots__ = ()

    def _get(self) -> object:
        return self._items.pop()


class PriorityQueue(Queue):
    """``asyncio.PriorityQueue``: the smallest item first (``(priority, value)`` tuples)."""

    __slots__ = ()

    def _make_items(self) -> Any:
        return []

    def _put(self, item: object) -> None:
        heapq.heappush(self._items, item)

    def _get(self) -> object:
        return heapq.heappop(self._items)
