"""Views of ``threading``, ``queue`` and ``concurrent.futures`` for sandboxed code: threads that
belong to their cell.

A cell is like a program: when its code ends, the runtime waits for the non-daemon threads it
started (a ``ThreadPoolExecutor`` left open is shut down first, as at interpreter exit) and then
stops the rest, so no thread outlives its cell. Every wait the views offer (``join``, lock and
semaphore ``acquire``, ``Event.wait``, ``Condition.wait``, ``Queue.get``/``put``/``join``,
``Future.result``, ``as_completed``) waits in short slices and gives up when the cell is stopped:
by its operation budget (in-process, the budget every thread's loops and calls draw from) or by
its end. A thread still running when its cell is stopped gets :class:`ThreadStopped` raised in
it, again and again until it ends; in the worker a thread that will not end keeps the cell from
returning, and the host's grace kill ends the process.

None of this is the real module: no real ``Thread``, lock or queue object is handed out (their
public attributes reach ``run`` of host threads, ``Queue.mutex`` and unpollable waits), and
``settrace``, ``setprofile``, ``excepthook``, ``stack_size``, ``_shutdown``, ``enumerate`` of host
threads and ``ProcessPoolExecutor`` are simply absent.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from safeexec.restricted.cell_threads import (
    ThreadState,
    ThreadStopped,
    report_error,
)
from safeexec.restricted.guards import GuardError
from safeexec.restricted.views.futures_view import futures_view

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = ["concurrency_views"]


def concurrency_views(cell: Cell) -> Mapping[str, dict[str, object]]:
    """The attributes of the ``threading``, ``queue`` and ``concurrent.futures`` views for one
    executor (its :class:`CellThreads` owns every thread they start)."""
    threads = cell.threads

    def timeout_of(timeout: object) -> float | None:
        if timeout is None:
            return None
        value = float(timeout)  # type: ignore[arg-type]
        return None if value < 0 else value

    class Thread:
        """``threading.Thread``: subclass it and override ``run``, or pass ``target``."""

        __slots__ = ("__weakref__", "_state")

        def __init__(
            self,
            group: None = None,
            target: Callable[..., object] | None = None,
            name: str | None = None,
            args: Iterable[object] = (),
            kwargs: Mapping[str, object] | None = None,
            *,
            daemon: bool | None = None,
        ) -> None:
            if group is not None:
                raise ValueError("group argument must be None for now")
            current = threads.current()
            inherited = bool(current is not None and current.daemon)  # type: ignore[attr-defined]
            self._state = ThreadState(
                target=target,
                name=threads.next_name() if name is None else str(name),
                args=tuple(args),
                kwargs=dict(kwargs or {}),
                daemon=inherited if daemon is None else bool(daemon),
            )

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("threads cannot be pickled or copied in restricted mode")

        def __repr__(self) -> str:
            status = "started" if self._state.real is not None else "initial"
            if self._state.real is not None and not self._state.alive:
                status = "stopped"
            return f"<Thread({self._state.name}, {status})>"

        def start(self) -> None:
            state = self._state
            if state.real is not None:
                raise RuntimeError("threads can only be started once")

            def body() -> None:
                try:
                    self.run()
                except ThreadStopped:
                    pass
                except BaseException as error:  # what the code raised ends its thread only
                    if threads.stopping:  # the stop's own end (in-process: the closed budget)
                        return
                    with contextlib.suppress(ThreadStopped):
                        report_error(cell, state.name, error)

            threads.start(self, state, body)

        def run(self) -> None:
            state = self._state
            if state.target is not None:
                state.target(*state.args, **state.kwargs)  # type: ignore[operator]

        def join(self, timeout: float | None = None) -> None:
            real = self._state.real
            if real is None:
                raise RuntimeError("cannot join thread before it is started")
            if real is threading.current_thread():
                raise RuntimeError("cannot join current thread")
            threads.wait(self._state.finished.wait, timeout_of(timeout))

        def is_alive(self) -> bool:
            return self._state.alive

        @property
        def name(self) -> str:
            return self._state.name

        @name.setter
        def name(self, value: str) -> None:
            self._state.name = str(value)

        @property
        def daemon(self) -> bool:
            return self._state.daemon

        @daemon.setter
        def daemon(self, value: bool) -> None:
            if self._state.real is not None:
                raise RuntimeError("cannot set daemon status of active thread")
            self._state.daemon = bool(value)

        @property
        def ident(self) -> int | None:
            real = self._state.real
            return None if real is None else real.ident

        @property
        def native_id(self) -> int | None:
            real = self._state.real
            return None if real is None else real.native_id

    # ``t.daemon = True`` and ``t.name = ...`` before ``start``: the class's own setters.
    cell.guards.writable_attributes[Thread] = frozenset({"name", "daemon"})
    main = Thread(name="MainThread")

    def current_thread() -> object:
        current = threads.current()
        return main if current is None else current

    class Lock:
        """``threading.Lock``; ``acquire`` waits in slices."""

        __slots__ = ("__weakref__", "_lock")
        _make: Callable[[], Any] = threading.Lock

        def __init__(self) -> None:
            self._lock = type(self)._make()

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("locks cannot be pickled or copied in restricted mode")

        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            if not blocking:
                return bool(self._lock.acquire(False))
            return threads.wait(lambda s: bool(self._lock.acquire(timeout=s)), timeout_of(timeout))

        def release(self) -> None:
            self._lock.release()

        def locked(self) -> bool:
            return bool(self._lock.locked())

        def __enter__(self) -> bool:
            return self.acquire()

        def __exit__(self, *exc: object) -> None:
            self.release()

    class RLock(Lock):
        """``threading.RLock``."""

        __slots__ = ()
        _make = threading.RLock

        def locked(self) -> bool:
            raise AttributeError("'RLock' object has no attribute 'locked'")

    class Condition:
        """``threading.Condition`` over a view lock (an ``RLock`` by default)."""

        __slots__ = ("__weakref__", "_cond", "_lock")

        def __init__(self, lock: Lock | None = None) -> None:
            if lock is None:
                lock = RLock()
            if not isinstance(lock, Lock):
                raise TypeError("Condition() takes a threading.Lock or RLock in restricted mode")
            self._lock = lock
            self._cond = threading.Condition(lock._lock)

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("conditions cannot be pickled or copied in restricted mode")

        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            return self._lock.acquire(blocking, timeout)

        def release(self) -> None:
            self._lock.release()

        def __enter__(self) -> bool:
            return self._lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self._lock.release()

        def wait(self, timeout: float | None = None) -> bool:
            # Slices may wake early, which a condition's callers must allow for anyway.
            return threads.wait(lambda s: bool(self._cond.wait(s)), timeout_of(timeout))

        def wait_for(self, predicate: Callable[[], object], timeout: float | None = None) -> object:
            deadline = None if timeout is None else time.monotonic() + float(timeout)
            result = predicate()
            while not result:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self.wait(left)
                result = predicate()
            return result

        def notify(self, n: int = 1) -> None:
            self._cond.notify(n)

        def notify_all(self) -> None:
            self._cond.notify_all()

    class Semaphore:
        """``threading.Semaphore``; ``acquire`` waits in slices."""

        __slots__ = ("__weakref__", "_semaphore")
        _make: Callable[[int], Any] = threading.Semaphore

        def __init__(self, value: int = 1) -> None:
            self._semaphore = type(self)._make(value)

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("semaphores cannot be pickled or copied in restricted mode")

        def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
            if not blocking:
                return bool(self._semaphore.acquire(False))
            return threads.wait(lambda s: bool(self._semaphore.acquire(timeout=s)), timeout)

        def release(self, n: int = 1) -> None:
            self._semaphore.release(n)

        def __enter__(self) -> bool:
            return self.acquire()

        def __exit__(self, *exc: object) -> None:
            self.release()

    class BoundedSemaphore(Semaphore):
        """``threading.BoundedSemaphore``."""

        __slots__ = ()
        _make = threading.BoundedSemaphore

    class Event:
        """``threading.Event``; ``wait`` waits in slices."""

        __slots__ = ("__weakref__", "_event")

        def __init__(self) -> None:
            self._event = threading.Event()

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("events cannot be pickled or copied in restricted mode")

        def set(self) -> None:
            self._event.set()

        def clear(self) -> None:
            self._event.clear()

        def is_set(self) -> bool:
            return self._event.is_set()

        def wait(self, timeout: float | None = None) -> bool:
            return threads.wait(self._event.wait, timeout)

    def make_queue(real_class: type, label: str) -> type:
        class Queue:
            __slots__ = ("__weakref__", "_queue")

            def __init__(self, maxsize: int = 0) -> None:
                self._queue = (
                    real_class() if real_class is queue.SimpleQueue else real_class(maxsize)
                )

            def __reduce__(self) -> str | tuple[object, ...]:
                raise GuardError("queues cannot be pickled or copied in restricted mode")

            def qsize(self) -> int:
                return int(self._queue.qsize())

            def empty(self) -> bool:
                return bool(self._queue.empty())

            def get(self, block: bool = True, timeout: float | None = None) -> object:
                if not block:
                    return self._queue.get(False)
                got: list[object] = []

                def attempt(seconds: float) -> bool:
                    try:
                        got.append(self._queue.get(timeout=seconds))
                    except queue.Empty:
                        return False
                    return True

                if not threads.wait(attempt, timeout):
                    raise queue.Empty
                return got[0]

            def get_nowait(self) -> object:
                return self._queue.get(False)

            def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
                if real_class is queue.SimpleQueue:
                    self._queue.put(item)  # never full
                    return
                if not block:
                    self._queue.put(item, False)
                    return

                def attempt(seconds: float) -> bool:
                    try:
                        self._queue.put(item, timeout=seconds)
                    except queue.Full:
                        return False
                    return True

                if not threads.wait(attempt, timeout):
                    raise queue.Full

            def put_nowait(self, item: object) -> None:
                self.put(item, block=False)

        if real_class is not queue.SimpleQueue:

            def full(self: Any) -> bool:
                return bool(self._queue.full())

            def task_done(self: Any) -> None:
                self._queue.task_done()

            def join(self: Any) -> None:
                real = self._queue

                def attempt(seconds: float) -> bool:
                    with real.all_tasks_done:
                        if real.unfinished_tasks:
                            real.all_tasks_done.wait(seconds)
                        return not real.unfinished_tasks

                threads.wait(attempt, None)

            def maxsize(self: Any) -> int:
                return int(self._queue.maxsize)

            Queue.full = full  # type: ignore[attr-defined]
            Queue.task_done = task_done  # type: ignore[attr-defined]
            Queue.join = join  # type: ignore[attr-defined]
            Queue.maxsize = property(maxsize)  # type: ignore[attr-defined]
        Queue.__name__ = Queue.__qualname__ = label
        return Queue

    return {
        "threading": {
            "Thread": Thread,
            "Lock": Lock,
            "RLock": RLock,
            "Condition": Condition,
            "Semaphore": Semaphore,
            "BoundedSemaphore": BoundedSemaphore,
            "Event": Event,
            "current_thread": current_thread,
            "main_thread": lambda: main,
            "active_count": lambda: 1 + len(threads.alive()),
            "enumerate": lambda: [main, *threads.alive()],
            "get_ident": lambda: threading.get_ident(),
            "get_native_id": lambda: threading.get_native_id(),
            "TIMEOUT_MAX": threading.TIMEOUT_MAX,
            "ThreadError": threading.ThreadError,
        },
        "queue": {
            "Queue": make_queue(queue.Queue, "Queue"),
            "LifoQueue": make_queue(queue.LifoQueue, "LifoQueue"),
            "PriorityQueue": make_queue(queue.PriorityQueue, "PriorityQueue"),
            "SimpleQueue": make_queue(queue.SimpleQueue, "SimpleQueue"),
            "Empty": queue.Empty,
            "Full": queue.Full,
        },
        "concurrent": {},  # its ``futures`` is the view below, when allowed
        "concurrent.futures": futures_view(cell, threads, Thread),
    }
