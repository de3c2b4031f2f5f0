"""The ``concurrent.futures`` view: ``ThreadPoolExecutor`` over the ``threading`` view's threads,
and futures whose waits are sliced (``cell_threads.py``). No ``ProcessPoolExecutor``; no real
``Future`` is handed out (its waits cannot be stopped)."""

from __future__ import annotations

import collections
import concurrent.futures
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from safeexec.restricted.cell_threads import MAX_LIVE_THREADS, CellThreads, report_error
from safeexec.restricted.guards import GuardError

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = ["futures_view"]

DoneAndNotDoneFutures = collections.namedtuple("DoneAndNotDoneFutures", "done not_done")


def futures_view(cell: Cell, threads: CellThreads, thread_class: type) -> dict[str, object]:
    """The attributes of the ``concurrent.futures`` view; workers are ``thread_class`` threads."""
    Thread = thread_class

    class Future:
        """``concurrent.futures.Future``; ``result`` and ``exception`` wait in slices."""

        __slots__ = ("__weakref__", "_done", "_future")

        def __init__(self) -> None:
            self._future: concurrent.futures.Future[object] = concurrent.futures.Future()
            self._done = threading.Event()
            self._future.add_done_callback(lambda _f: self._done.set())

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("futures cannot be pickled or copied in restricted mode")

        def __repr__(self) -> str:
            return f"<Future state={self._future._state.lower()}>"

        def _wait(self, timeout: float | None) -> None:
            if not threads.wait(self._done.wait, timeout):
                raise TimeoutError()

        def result(self, timeout: float | None = None) -> object:
            self._wait(timeout)
            return self._future.result(0)

        def exception(self, timeout: float | None = None) -> BaseException | None:
            self._wait(timeout)
            return self._future.exception(0)

        def done(self) -> bool:
            return self._future.done()

        def running(self) -> bool:
            return self._future.running()

        def cancelled(self) -> bool:
            return self._future.cancelled()

        def cancel(self) -> bool:
            return self._future.cancel()

        def add_done_callback(self, fn: Callable[[Future], object]) -> None:
            def call(_real: object) -> None:
                try:
                    fn(self)
                except Exception as error:
                    report_error(cell, "future callback", error)

            self._future.add_done_callback(call)

        def set_running_or_notify_cancel(self) -> bool:
            return self._future.set_running_or_notify_cancel()

        def set_result(self, result: object) -> None:
            self._future.set_result(result)

        def set_exception(self, exception: BaseException) -> None:
            self._future.set_exception(exception)

    def _futures(fs: Iterable[object]) -> list[Future]:
        unique = list(dict.fromkeys(fs))
        if not all(isinstance(f, Future) for f in unique):
            raise TypeError("expected futures of this concurrent.futures view")
        return unique  # type: ignore[return-value]

    def _changed(futures: list[Future]) -> threading.Event:
        event = threading.Event()
        for future in futures:
            future._future.add_done_callback(lambda _f: event.set())
        return event

    def as_completed(fs: Iterable[object], timeout: float | None = None) -> Iterator[Future]:
        pending = _futures(fs)
        total = len(pending)
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        changed = _changed(pending)
        while pending:
            changed.clear()
            done = [f for f in pending if f.done()]
            for future in done:
                pending.remove(future)
                yield future
            if not pending or done:
                continue
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not threads.wait(changed.wait, left):
                raise TimeoutError(f"{len(pending)} (of {total}) futures unfinished")

    def wait(
        fs: Iterable[object], timeout: float | None = None, return_when: str = "ALL_COMPLETED"
    ) -> object:
        futures = _futures(fs)
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        changed = _changed(futures)

        def finished() -> bool:
            done = [f for f in futures if f.done()]
            if return_when == "FIRST_COMPLETED":
                return bool(done)
            if return_when == "FIRST_EXCEPTION" and any(
                not f.cancelled() and f._future.exception(0) is not None for f in done
            ):
                return True
            return len(done) == len(futures)

        while True:
            changed.clear()
            if finished():
                break
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not threads.wait(changed.wait, left):
                break
        done = {f for f in futures if f.done()}
        return DoneAndNotDoneFutures(done, set(futures) - done)

    class ThreadPoolExecutor:
        """``concurrent.futures.ThreadPoolExecutor`` over this view's threads."""

        __slots__ = ("__weakref__", "_idle", "_max", "_prefix", "_shut", "_work", "_workers")

        def __init__(
            self,
            max_workers: int | None = None,
            thread_name_prefix: str = "",
            initializer: Callable[..., object] | None = None,
            initargs: tuple[object, ...] = (),
        ) -> None:
            if initializer is not None:
                raise TypeError("ThreadPoolExecutor(initializer=...) is not available here")
            workers = min(32, (os.cpu_count() or 1) + 4) if max_workers is None else max_workers
            if workers <= 0:
                raise ValueError("max_workers must be greater than 0")
            self._max = min(int(workers), MAX_LIVE_THREADS)
            self._prefix = str(thread_name_prefix) or "ThreadPoolExecutor"
            self._work: queue.SimpleQueue[object] = queue.SimpleQueue()
            self._workers: list[Any] = []
            self._idle = threading.Semaphore(0)
            self._shut = False
            threads.add_pool(self)

        def __reduce__(self) -> str | tuple[object, ...]:
            raise GuardError("executors cannot be pickled or copied in restricted mode")

        def _next_item(self) -> object:
            got: list[object] = []

            def attempt(seconds: float) -> bool:
                try:
                    got.append(self._work.get(timeout=seconds))
                except queue.Empty:
                    return False
                return True

            threads.wait(attempt, None)
            return got[0]

        def submit(self, fn: Callable[..., object], /, *args: object, **kwargs: object) -> Future:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future = Future()
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(False) and len(self._workers) < self._max:
                worker = Thread(
                    target=self._run_worker, name=f"{self._prefix}_{len(self._workers)}"
                )
                self._workers.append(worker)
                worker.start()
            return future

        def _run_worker(self) -> None:
            while True:
                item = self._next_item()
                if item is None:
                    self._work.put(None)
                    return
                future, fn, args, kwargs = cast(
                    "tuple[Future, Callable[..., object], Any, Any]", item
                )
                if future.set_running_or_notify_cancel():
                    try:
                        result = fn(*args, **kwargs)
                    except Exception as error:
                        future.set_exception(error)
                    else:
                        future.set_result(result)
                self._idle.release()

        def map(
            self,
            fn: Callable[..., object],
            *iterables: Iterable[object],
            timeout: float | None = None,
            chunksize: int = 1,
        ) -> Iterator[object]:
            deadline = None if timeout is None else time.monotonic() + float(timeout)
            futures = [self.submit(fn, *args) for args in zip(*iterables, strict=False)]

            def results() -> Iterator[object]:
                try:
                    futures.reverse()
                    while futures:
                        left = None if deadline is None else deadline - time.monotonic()
                        yield futures.pop().result(left)
                finally:
                    for future in futures:
                        future.cancel()

            return results()

        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            self._shut = True
            if cancel_futures:
                while True:
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()  # type: ignore[index]
            self._work.put(None)
            if wait:
                for worker in list(self._workers):
                    worker.join()

        def __enter__(self) -> ThreadPoolExecutor:
            return self

        def __exit__(self, *exc: object) -> None:
            self.shutdown(wait=True)

    return {
        "ThreadPoolExecutor": ThreadPoolExecutor,
        "Future": Future,
        "as_completed": as_completed,
        "wait": wait,
        "FIRST_COMPLETED": "FIRST_COMPLETED",
        "FIRST_EXCEPTION": "FIRST_EXCEPTION",
        "ALL_COMPLETED": "ALL_COMPLETED",
        "TimeoutError": TimeoutError,
        "CancelledError": concurrent.futures.CancelledError,
    }
