"""The event loop of the restricted ``asyncio`` view: futures, tasks and a deterministic loop of
the runtime's own, in pure Python.

No real asyncio object is ever made or handed out: asyncio's loop, tasks and futures reach frames
(``get_stack``), the loop (``_loop``), executors, subprocesses and sockets. This loop has no
selector, no threads and no real clock: time is virtual (a sleep advances it instantly once
nothing else can run), so a run is deterministic and a sleep costs no wall time. Every callback
the loop runs draws one operation from the cell's budget, so an endless ``await`` chain ends
with the budget like an endless loop. When every task waits and no timer is due, nothing can
ever wake them: the loop raises instead of hanging.

The classes cannot be subclassed by sandboxed code (``_Final``), so every method the loop calls
on a future or task is its own.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

from safeexec.restricted.cell_threads import ThreadStopped, report_error
from safeexec.restricted.guards import GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = [
    "STOP_SIGNALS",
    "CancelledError",
    "EventLoop",
    "Future",
    "Handle",
    "InvalidStateError",
    "LoopState",
    "Task",
    "running_loop",
]

# What ends the run instead of becoming a task's exception: the cell's own stop signals.
STOP_SIGNALS = (SystemExit, KeyboardInterrupt, ThreadStopped)

# The loop running in each thread (one at a time per thread, whichever executor made it).
_RUNNING: dict[int, EventLoop] = {}


def running_loop() -> EventLoop | None:
    """The loop running in this thread, if any."""
    return _RUNNING.get(threading.get_ident())


def _require_loop(loop: object) -> EventLoop:
    if loop is None:
        loop = running_loop()
        if loop is None:
            raise RuntimeError("no running event loop")
    if type(loop) is not EventLoop:
        raise TypeError(f"loop must be an event loop of this asyncio view, not {loop!r}")
    return loop


class CancelledError(BaseException):
    """The task or future was cancelled (a ``BaseException``, as in asyncio)."""


class InvalidStateError(Exception):
    """The future is not in a state that allows the call (result of a pending future…)."""


class _Final(metaclass=RuntimeClass):
    """Sandboxed code cannot subclass the loop's classes: the loop trusts their methods."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        if cls.__module__.split(".")[0] != "safeexec":
            raise TypeError(f"{cls.__bases__[0].__name__} cannot be subclassed in restricted mode")
        super().__init_subclass__(**kwargs)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("asyncio objects cannot be pickled or copied in restricted mode")


class LoopState(metaclass=RuntimeClass):
    """What the loops of one executor share: its budget, and each thread's default loop
    (``get_event_loop`` outside a running loop)."""

    def __init__(self, cell: Cell) -> None:
        self.cell = cell
        self.default: dict[int, EventLoop] = {}

    def tick(self) -> None:
        """Draw one operation from the running cell's budget."""
        if next(self.cell.budget.counter, None) is None:
            raise RuntimeError("the operation budget is exhausted")


_PENDING, _CANCELLED, _FINISHED = "PENDING", "CANCELLED", "FINISHED"


class Handle(_Final):
    """A scheduled callback (``call_soon``, ``call_later``): ``cancel`` it before it runs."""

    __slots__ = ("_args", "_callback", "_cancelled", "_loop", "_when")

    def __init__(
        self,
        loop: EventLoop,
        callback: Callable[..., object],
        args: tuple[object, ...],
        when: float,
    ) -> None:
        self._loop = loop
        self._callback: Callable[..., object] | None = callback
        self._args = args
        self._cancelled = False
        self._when = when

    def cancel(self) -> None:
        self._cancelled = True
        self._callback = None
        self._args = ()

    def cancelled(self) -> bool:
        return self._cancelled

    def when(self) -> float:
        return self._when

    def _run(self) -> None:
        callback, args = self._callback, self._args
        if callback is None:
            return
        try:
            callback(*args)
        except STOP_SIGNALS:
            raise
        except Exception as error:
            report_error(self._loop._state.cell, "event loop callback", error)

    def __repr__(self) -> str:
        return f"<Handle {'cancelled' if self._cancelled else 'scheduled'}>"


class Future(_Final):
    """``asyncio.Future``: a result that will exist later; ``await`` it inside a task."""

    __slots__ = (
        "__weakref__",
        "_callbacks",
        "_cancel_message",
        "_exception",
        "_loop",
        "_result",
        "_state",
    )

    def __init__(self, *, loop: EventLoop | None = None) -> None:
        self._loop = _require_loop(loop)
        self._state = _PENDING
        self._result: object = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Any], object]] = []
        self._cancel_message: object = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._state.lower()}>"

    def done(self) -> bool:
        return self._state != _PENDING

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def _cancelled_error(self) -> CancelledError:
        return (
            CancelledError()
            if self._cancel_message is None
            else CancelledError(self._cancel_message)
        )

    def result(self) -> object:
        if self._state == _CANCELLED:
            raise self._cancelled_error()
        if self._state != _FINISHED:
            raise InvalidStateError("Result is not ready.")
        if self._exception is not None:
            raise self._exception
        return self._result

    def exception(self) -> BaseException | None:
        if self._state == _CANCELLED:
            raise self._cancelled_error()
        if self._state != _FINISHED:
            raise InvalidStateError("Exception is not set.")
        return self._exception

    def get_loop(self) -> EventLoop:
        return self._loop

    def add_done_callback(self, fn: Callable[[Any], object], *, context: object = None) -> None:
        if not callable(fn):
            raise TypeError(f"a callable is required, not {type(fn).__name__!r}")
        if self.done():
            self._loop.call_soon(fn, self)
        else:
            self._callbacks.append(fn)

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        kept = [cb for cb in self._callbacks if cb != fn]
        removed = len(self._callbacks) - len(kept)
        self._callbacks[:] = kept
        return removed

    def _schedule_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            self._loop.call_soon(callback, self)

    def set_result(self, result: object) -> None:
        if self._state != _PENDING:
            raise InvalidStateError(f"{self._state}: {self!r}")
        self._result = result
        self._state = _FINISHED
        self._schedule_callbacks()

    def set_exception(self, exception: BaseException | type[BaseException]) -> None:
        if self._state != _PENDING:
            raise InvalidStateError(f"{self._state}: {self!r}")
        if isinstance(exception, type):
            exception = exception()
        if not isinstance(exception, BaseException):
            raise TypeError(f"invalid exception object {exception!r}")
        if isinstance(exception, StopIteration):
            raise TypeError(
                "StopIteration interacts badly with generators and cannot be raised into a Future"
            )
        self._exception = exception
        self._state = _FINISHED
        self._schedule_callbacks()

    def cancel(self, msg: object = None) -> bool:
        if self._state != _PENDING:
            return False
        self._state = _CANCELLED
        self._cancel_message = msg
        self._schedule_callbacks()
        return True

    def __await__(self) -> Generator[Future, None, object]:
        # What a task sends back after the yield is ignored: sandboxed code can drive its own
        # coroutine by hand (``coro.send(x)``), so the state is read from the future itself.
        if not self.done():
            yield self
        if not self.done():
            raise RuntimeError("await wasn't used with future")
        return self.result()

    __iter__ = __await__


class Task(Future):
    """``asyncio.Task``: runs a coroutine on the loop; a ``Future`` of its return value."""

    __slots__ = ("_coro", "_must_cancel", "_name", "_num_cancels", "_waiting_on")

    def __init__(self, coro: object, *, loop: EventLoop | None = None, name: object = None) -> None:
        if type(coro) is not types.CoroutineType:
            raise TypeError(f"a coroutine was expected, got {coro!r}")
        super().__init__(loop=loop)
        self._coro: Coroutine[Any, Any, object] = coro
        self._name = f"Task-{next(self._loop._task_ids)}" if name is None else str(name)
        self._must_cancel = False
        self._num_cancels = 0
        self._waiting_on: Future | None = None
        self._loop._tasks.add(self)
        self._loop.call_soon(self._step)

    def __repr__(self) -> str:
        return f"<Task {self._state.lower()} name={self._name!r}>"

    def get_name(self) -> str:
        return self._name

    def set_name(self, value: object) -> None:
        self._name = str(value)

    def get_coro(self) -> object:
        return self._coro

    def cancelling(self) -> int:
        return self._num_cancels

    def uncancel(self) -> int:
        if self._num_cancels > 0:
            self._num_cancels -= 1
        return self._num_cancels

    def cancel(self, msg: object = None) -> bool:
        if self.done():
            return False
        self._num_cancels += 1
        waiting = self._waiting_on
        if waiting is not None and waiting.cancel(msg=msg):
            # The wakeup resumes the coroutine, whose ``await`` then raises CancelledError.
            return True
        self._must_cancel = True
        self._cancel_message = msg
        return True

    def set_result(self, result: object) -> None:
        raise RuntimeError("Task does not support set_result operation")

    def set_exception(self, exception: BaseException | type[BaseException]) -> None:
        raise RuntimeError("Task does not support set_exception operation")

    def _finish(self, result: object = None, exception: BaseException | None = None) -> None:
        self._loop._tasks.discard(self)
        if exception is None:
            Future.set_result(self, result)
        else:
            Future.set_exception(self, exception)

    def _step(self, error: BaseException | None = None) -> None:
        if self.done():
            return
        if self._must_cancel:
            error = self._cancelled_error()
            self._must_cancel = False
        self._waiting_on = None
        loop = self._loop
        outer, loop._current = loop._current, self
        try:
            yielded = self._coro.send(None) if error is None else self._coro.throw(error)
        except StopIteration as stop:
            if self._must_cancel:
                self._must_cancel = False
                loop._tasks.discard(self)
                Future.cancel(self, msg=self._cancel_message)
            else:
                self._finish(stop.value)
        except CancelledError as cancelled:
            loop._tasks.discard(self)
            Future.cancel(self, msg=cancelled.args[0] if cancelled.args else None)
        except STOP_SIGNALS:
            # Where the stop landed (in the coroutine, or in this frame just after it yielded,
            # where 3.13 checks for it) the task stays pending: ``_abandon`` closes its
            # coroutine, which a finished task would leave suspended for the collector.
            raise
        except BaseException as exc:  # the task's own failure, kept as its exception
            self._finish(exception=exc)
        else:
            self._wait_on(yielded)
        finally:
            loop._current = outer

    def _wait_on(self, yielded: object) -> None:
        loop = self._loop
        if yielded is None:
            loop.call_soon(self._step)  # a bare ``yield``: let the others run
        elif isinstance(yielded, Future):  # the view's own (sandboxed code cannot subclass it)
            if yielded._loop is not loop:
                loop.call_soon(
                    self._step, RuntimeError(f"Task {self._name!r} awaits a future of another loop")
                )
            elif yielded is self:
                loop.call_soon(self._step, RuntimeError(f"Task {self._name!r} cannot await itself"))
            else:
                self._waiting_on = yielded
                yielded.add_done_callback(self._wakeup)
                if self._must_cancel and yielded.cancel(msg=self._cancel_message):
                    self._must_cancel = False
        else:
            loop.call_soon(self._step, RuntimeError(f"Task got bad yield: {yielded!r}"))

    def _wakeup(self, _future: Future) -> None:
        self._step()


class EventLoop(_Final):
    """The loop ``asyncio.run`` and ``new_event_loop`` give: virtual time, no I/O."""

    __slots__ = (
        "__weakref__",
        "_asyncgens",
        "_closed",
        "_closers",
        "_current",
        "_ready",
        "_running",
        "_seq",
        "_state",
        "_task_ids",
        "_tasks",
        "_time",
        "_timers",
    )

    def __init__(self, state: LoopState) -> None:
        self._state = state
        self._ready: collections.deque[Handle] = collections.deque()
        self._timers: list[tuple[float, int, Handle]] = []
        self._seq = itertools.count()
        self._task_ids = itertools.count(1)
        self._time = time.monotonic()
        self._running = False
        self._closed = False
        self._current: Task | None = None
        self._tasks: set[Task] = set()
        self._asyncgens: weakref.WeakSet[object] = weakref.WeakSet()
        self._closers: list[Task] = []

    def __repr__(self) -> str:
        return f"<EventLoop running={self._running} closed={self._closed}>"

    # -- scheduling ------------------------------------------------------------------------------
    def time(self) -> float:
        """The loop's clock (virtual: it jumps to the next timer when nothing else can run)."""
        return self._time

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Event loop is closed")

    def call_soon(
        self, callback: Callable[..., object], *args: object, context: object = None
    ) -> Handle:
        self._check_open()
        if not callable(callback):
            raise TypeError("a callable object was expected by call_soon()")
        handle = Handle(self, callback, args, self._time)
        self._ready.append(handle)
        return handle

    def call_at(
        self, when: float, callback: Callable[..., object], *args: object, context: object = None
    ) -> Handle:
        self._check_open()
        if not callable(callback):
            raise TypeError("a callable object was expected by call_at()")
        moment = float(when)
        if moment != moment:
            raise ValueError("the time of a timer cannot be NaN")
        handle = Handle(self, callback, args, moment)
        heapq.heappush(self._timers, (moment, next(self._seq), handle))
        return handle

    def call_later(
        self, delay: float, callback: Callable[..., object], *args: object, context: object = None
    ) -> Handle:
        return self.call_at(self._time + max(0.0, float(delay)), callback, *args)

    def create_future(self) -> Future:
        return Future(loop=self)

    def create_task(self, coro: object, *, name: object = None, context: object = None) -> Task:
        self._check_open()
        return Task(coro, loop=self, name=name)

    def run_in_executor(
        self, executor: object, func: Callable[..., object], *args: object
    ) -> Future:
        """Runs ``func(*args)`` at once, on the loop (there are no threads): a done future."""
        if executor is not None:
            raise ValueError("run_in_executor takes None as its executor in restricted mode")
        future = self.create_future()
        try:
            future.set_result(func(*args))
        except STOP_SIGNALS:
            raise
        except Exception as error:
            future.set_exception(error)
        return future

    # -- running -----------------------------------------------------------------------------------
    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self._running:
            raise RuntimeError("Cannot close a running event loop")
        self._closed = True
        self._ready.clear()
        self._timers.clear()

    def _run_once(self) -> bool:
        """Run what is ready (advancing the clock to the next timer first when nothing is);
        False when nothing is ready and no timer is pending."""
        timers = self._timers
        while timers and timers[0][2]._cancelled:
            heapq.heappop(timers)
        if not self._ready:
            if not timers:
                return False
            self._time = max(self._time, timers[0][0])
        while timers and timers[0][0] <= self._time:
            handle = heapq.heappop(timers)[2]
            if not handle._cancelled:
                self._ready.append(handle)
        for _ in range(len(self._ready)):
            handle = self._ready.popleft()
            if not handle._cancelled:
                self._state.tick()
                handle._run()
        return True

    def run_until_complete(self, future: object) -> object:
        """Run until ``future`` (a coroutine or a future of this loop) is done; its result."""
        self._check_open()
        if self._running:
            raise RuntimeError("This event loop is already running")
        if running_loop() is not None:
            raise RuntimeError("Cannot run the event loop while another loop is running")
        if type(future) is types.CoroutineType:
            target: Future = self.create_task(future)
        elif isinstance(future, Future):
            if future._loop is not self:
                raise ValueError("The future belongs to a different loop than the one run")
            target = future
        else:
            raise TypeError(f"An asyncio.Future or a coroutine is required, not {future!r}")
        try:
            with self._running_here():
                self._run_until_done(target)
        except STOP_SIGNALS as stop:
            self._abandon_surely(stop)
            raise
        return target.result()

    # The loops of the stop paths run in functions of their own, called inside the ``try`` or
    # ``with`` that must see a stop: CPython 3.13 checks for asynchronous exceptions at a loop's
    # back edge, which its exception table leaves outside the enclosing block
    # (python/cpython#139622); a stop landing there skipped ``_abandon`` and left coroutines
    # suspended. ``tests/restricted/test_stop_paths.py`` holds every stop path to this.
    def _run_until_done(self, target: Future) -> None:
        while not target.done():
            if not self._run_once():
                raise RuntimeError(
                    "deadlock: every task waits on something no task or timer will ever do"
                )

    def run_forever(self) -> None:
        raise RuntimeError("run_forever is not available in restricted mode; use asyncio.run")

    def _running_here(self) -> _Running:
        return _Running(self)

    def _cancel_all(self) -> None:
        """``asyncio.run``'s ending: cancel the tasks left and let them unwind, then close the
        async generators still open (each callback still draws from the budget)."""
        with self._running_here():
            self._settle()
        self._closers.clear()

    def _settle(self) -> None:
        """Cancel the tasks left, run until they unwound, then close the async generators."""
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        while (self._ready or any(not t.done() for t in tasks)) and self._run_once():
            pass
        generators = list(self._asyncgens)
        self._asyncgens.clear()
        closers = [*self._closers, *(self.create_task(_aclose(g)) for g in generators)]
        while any(not task.done() for task in closers) and self._run_once():
            pass

    def _abandon_surely(self, stop: BaseException) -> None:
        """``_abandon`` until it completes: a stop round that lands before its clean-up is
        marked unwinding, or one already pending when it is (delivered at the thread's next
        check), cuts it short, and it begins again where it was."""
        try:
            self._abandon(stop)
        except STOP_SIGNALS as again:
            self._abandon_surely(again)  # not a loop: see ``_run_until_done``

    def _abandon(self, stop: BaseException) -> None:
        """A stop signal ended the run: the tasks end where they stand, with ``stop`` as their
        exception. Their coroutines are closed here, in the stopped thread, where no handler
        can swallow the stop (the transformer's ``_caught_``); left suspended, they would be
        resumed later by the collector, in whatever thread and cell collects them. Async
        generators need no closing: their finalizer is this loop's, which does nothing once
        the loop is closed.

        Cut short anywhere, it can run again: a task leaves its pool only once it has ended,
        and closing a coroutine twice does nothing."""
        with self._state.cell.threads.unwinding():  # no new stop round cuts it short
            self._ready.clear()
            self._asyncgens.clear()
            self._end_tasks(stop)

    def _end_tasks(self, stop: BaseException) -> None:
        for pool in (self._tasks, self._closers):
            while pool:
                task = next(iter(pool))
                if not task.done():
                    with contextlib.suppress(BaseException):  # a stop, or the coroutine's end
                        task._coro.close()
                    task._callbacks = []  # nothing of the code runs after a stop
                    Future.set_exception(task, stop)
                pool.remove(task)

    # -- async generator hooks (what asyncio's own loop does: finalize on the loop) -------------
    def _firstiter(self, agen: object) -> None:
        self._asyncgens.add(agen)

    def _finalizer(self, agen: object) -> None:
        self._asyncgens.discard(agen)
        if not self._closed:
            # Not one of the loop's tasks: ``asyncio.run``'s ending lets it finish, never
            # cancels it.
            closer = self.create_task(_aclose(agen))
            self._tasks.discard(closer)
            self._closers.append(closer)


async def _aclose(agen: Any) -> None:
    await agen.aclose()


class _Running(metaclass=RuntimeClass):
    """Marks ``loop`` running in this thread, with its async-generator hooks installed."""

    def __init__(self, loop: EventLoop) -> None:
        self._loop = loop
        self._hooks: Any = None
        self._ident = 0

    def __enter__(self) -> None:
        loop = self._loop
        self._ident = threading.get_ident()
        loop._running = True
        _RUNNING[self._ident] = loop
        self._hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=loop._firstiter, finalizer=loop._finalizer)

    def __exit__(self, *exc: object) -> None:
        loop = self._loop
        sys.set_asyncgen_hooks(*self._hooks)
        _RUNNING.pop(self._ident, None)
        loop._running = False
