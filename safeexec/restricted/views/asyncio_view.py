"""The ``asyncio`` view: ``run``, ``sleep``, ``gather``, tasks, timeouts, ``wait``,
``as_completed``, ``TaskGroup``, queues and locks over the runtime's own deterministic loop
(``async_loop.py``, ``async_sync.py``). Not the real module: no real loop, task or future,
no executors, subprocesses, sockets or signal handlers; ``to_thread`` and ``run_in_executor``
run the function on the loop (there are no threads here)."""

from __future__ import annotations

import collections
import inspect
import threading
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from safeexec.restricted.views.async_loop import (
    CancelledError,
    EventLoop,
    Future,
    InvalidStateError,
    LoopState,
    Task,
    _Final,
    _require_loop,
    running_loop,
)
from safeexec.restricted.views.async_sync import (
    BoundedSemaphore,
    Condition,
    Event,
    LifoQueue,
    Lock,
    PriorityQueue,
    Queue,
    QueueEmpty,
    QueueFull,
    Semaphore,
)

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = ["asyncio_view"]

FIRST_COMPLETED = "FIRST_COMPLETED"
FIRST_EXCEPTION = "FIRST_EXCEPTION"
ALL_COMPLETED = "ALL_COMPLETED"


def _is_future(value: object) -> bool:
    return isinstance(value, Future)  # the view's own: sandboxed code cannot subclass it


def ensure_future(aw: object, *, loop: EventLoop | None = None) -> Future:
    """A future for ``aw``: itself if it is one, a task for a coroutine or other awaitable."""
    if _is_future(aw):
        assert isinstance(aw, Future)
        if loop is not None and aw._loop is not loop:
            raise ValueError("The future belongs to a different loop than the one given")
        return aw
    target = _require_loop(loop)
    if type(aw) is types.CoroutineType:
        return target.create_task(aw)
    if inspect.isawaitable(aw):
        return target.create_task(_await(aw))
    raise TypeError(f"An asyncio.Future, a coroutine or an awaitable is required, not {aw!r}")


async def _await(aw: Any) -> object:
    return await aw


def create_task(coro: object, *, name: object = None, context: object = None) -> Task:
    """Schedule ``coro`` on the running loop."""
    return _require_loop(None).create_task(coro, name=name)


def current_task(loop: EventLoop | None = None) -> Task | None:
    return _require_loop(loop)._current


def all_tasks(loop: EventLoop | None = None) -> set[Task]:
    return {task for task in _require_loop(loop)._tasks if not task.done()}


async def sleep(delay: float, result: object = None) -> object:
    """Wait ``delay`` seconds of the loop's virtual clock (no wall time passes)."""
    seconds = float(delay)
    if seconds != seconds:
        raise ValueError("sleep length must not be NaN")
    loop = _require_loop(None)
    if seconds <= 0:
        await _Yield()
        return result
    future = loop.create_future()
    handle = loop.call_later(seconds, _resolve, future, result)
    try:
        return await future
    finally:
        handle.cancel()


def _resolve(future: Future, result: object) -> None:
    if not future.done():
        future.set_result(result)


class _Yield(_Final):
    """``await _Yield()``: give the other tasks a turn (``sleep(0)``)."""

    __slots__ = ()

    def __await__(self) -> Any:
        yield None


class _GatheringFuture(Future):
    """What ``gather`` returns: cancelling it cancels the awaitables it gathers."""

    __slots__ = ("_cancel_requested", "_children")

    def __init__(self, children: list[Future], *, loop: EventLoop) -> None:
        super().__init__(loop=loop)
        self._children = children
        self._cancel_requested = False

    def cancel(self, msg: object = None) -> bool:
        if self.done():
            return False
        cancelled = False
        for child in self._children:
            if child.cancel(msg=msg):
                cancelled = True
        if cancelled:
            self._cancel_requested = True
        return cancelled


def gather(*aws: object, return_exceptions: bool = False) -> Future:
    """A future of the results of ``aws`` in order; the first exception, unless
    ``return_exceptions``, when exceptions are results too."""
    loop = _require_loop(None)
    if not aws:
        empty = loop.create_future()
        empty.set_result([])
        return empty
    by_arg: dict[int, Future] = {}
    children: list[Future] = []
    for aw in aws:
        child = by_arg.get(id(aw))
        if child is None:
            child = ensure_future(aw, loop=loop)
            by_arg[id(aw)] = child
        children.append(child)
    outer = _GatheringFuture(children, loop=loop)
    unique = list(dict.fromkeys(children))
    finished = 0

    def child_done(child: Future) -> None:
        nonlocal finished
        finished += 1
        if outer.done():
            return
        if not return_exceptions:
            if child.cancelled():
                outer.set_exception(child._cancelled_error())
                return
            error = child.exception()
            if error is not None:
                outer.set_exception(error)
                return
        if finished < len(unique):
            return
        results: list[object] = []
        for future in children:
            if future.cancelled():
                results.append(future._cancelled_error())
            else:
                error = future.exception()
                results.append(future.result() if error is None else error)
        if outer._cancel_requested:
            outer.set_exception(CancelledError())
        else:
            outer.set_result(results)

    for child in unique:
        child.add_done_callback(child_done)
    return outer


class Timeout(_Final):
    """``asyncio.timeout``: ``async with asyncio.timeout(s):`` cancels the block after ``s``
    seconds and raises ``TimeoutError`` in its place."""

    __slots__ = ("_cancelling", "_expired", "_handle", "_task", "_when")

    def __init__(self, when: float | None) -> None:
        self._when = when
        self._task: Task | None = None
        self._handle: Any = None
        self._expired = False
        self._cancelling = 0

    def when(self) -> float | None:
        return self._when

    def expired(self) -> bool:
        return self._expired

    def reschedule(self, when: float | None) -> None:
        self._when = when
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._task is not None and when is not None:
            loop = self._task._loop
            if when <= loop.time():
                self._handle = loop.call_soon(self._on_timeout)
            else:
                self._handle = loop.call_at(when, self._on_timeout)

    def _on_timeout(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._expired = True
        self._handle = None

    async def __aenter__(self) -> Timeout:
        task = current_task()
        if task is None:
            raise RuntimeError("Timeout should be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self.reschedule(self._when)
        return self

    async def __aexit__(self, kind: object, value: object, traceback: object) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if (
            self._expired
            and self._task is not None
            and self._task.uncancel() <= self._cancelling
            and kind is CancelledError
        ):
            raise TimeoutError from value if isinstance(value, BaseException) else None


def timeout(delay: float | None) -> Timeout:
    loop = _require_loop(None)
    return Timeout(None if delay is None else loop.time() + float(delay))


def timeout_at(when: float | None) -> Timeout:
    return Timeout(None if when is None else float(when))


async def wait_for(aw: object, timeout: float | None) -> object:
    """``aw``'s result, or ``TimeoutError`` (``aw`` cancelled) after ``timeout`` seconds."""
    if timeout is None:
        return await ensure_future(aw)
    async with Timeout(_require_loop(None).time() + float(timeout)):
        return await ensure_future(aw)


def _future_set(fs: object) -> set[Future]:
    if _is_future(fs) or type(fs) is types.CoroutineType:
        raise TypeError(f"expect an iterable of futures, not {type(fs).__name__}")
    futures = set()
    for item in fs:  # type: ignore[attr-defined]
        if not _is_future(item):
            raise TypeError(
                "asyncio.wait takes futures or tasks; wrap coroutines with asyncio.create_task"
            )
        futures.add(item)
    return futures


async def wait(
    fs: Iterable[object], *, timeout: float | None = None, return_when: str = ALL_COMPLETED
) -> tuple[set[Future], set[Future]]:
    """``(done, pending)`` once ``return_when`` holds or ``timeout`` seconds passed."""
    futures = _future_set(fs)
    if not futures:
        raise ValueError("Set of Tasks/Futures is empty.")
    if return_when not in (FIRST_COMPLETED, FIRST_EXCEPTION, ALL_COMPLETED):
        raise ValueError(f"Invalid return_when value: {return_when}")
    loop = _require_loop(None)

    def satisfied() -> bool:
        done = [f for f in futures if f.done()]
        if return_when == FIRST_COMPLETED and done:
            return True
        if return_when == FIRST_EXCEPTION and any(
            not f.cancelled() and f.exception() is not None for f in done
        ):
            return True
        return len(done) == len(futures)

    if not satisfied():
        waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _resolve, waiter, None)

        def changed(_future: Future) -> None:
            if satisfied():
                _resolve(waiter, None)

        for future in futures:
            future.add_done_callback(changed)
        try:
            await waiter
        finally:
            if timer is not None:
                timer.cancel()
            for future in futures:
                future.remove_done_callback(changed)
    done = {f for f in futures if f.done()}
    return done, futures - done


class _AsCompleted(_Final):
    """What ``as_completed`` returns: iterate it (``for f in …: await f``) or ``async for``."""

    __slots__ = ("_done", "_left", "_loop", "_timed_out", "_timer", "_waiters")

    def __init__(self, fs: Iterable[object], timeout: float | None) -> None:
        loop = _require_loop(None)
        self._loop = loop
        todo = {ensure_future(f, loop=loop) for f in set(fs)}
        self._left = len(todo)
        self._done: collections.deque[Future] = collections.deque()
        self._waiters: collections.deque[Future] = collections.deque()
        self._timed_out = False
        self._timer = None if timeout is None else loop.call_later(timeout, self._on_timeout)
        for future in todo:
            future.add_done_callback(self._on_done)

    def _on_done(self, future: Future) -> None:
        self._done.append(future)
        if self._left == len(self._done) and self._timer is not None:
            self._timer.cancel()
        for waiter in self._waiters:
            _resolve(waiter, None)
        self._waiters.clear()

    def _on_timeout(self) -> None:
        self._timed_out = True
        for waiter in self._waiters:
            _resolve(waiter, None)
        self._waiters.clear()

    async def _next_result(self) -> object:
        while not self._done:
            if self._timed_out:
                raise TimeoutError
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            await waiter
        return self._done.popleft().result()

    def __iter__(self) -> _AsCompleted:
        return self

    def __next__(self) -> object:
        if self._left <= 0:
            raise StopIteration
        self._left -= 1
        return self._next_result()

    def __aiter__(self) -> _AsCompleted:
        return self

    async def __anext__(self) -> object:
        if self._left <= 0:
            raise StopAsyncIteration
        self._left -= 1
        return await self._next_result()


def as_completed(fs: Iterable[object], *, timeout: float | None = None) -> _AsCompleted:
    """Awaitables that give the results of ``fs`` in the order they finish."""
    return _AsCompleted(fs, timeout)


def shield(aw: object) -> Future:
    """A future of ``aw`` whose cancellation does not cancel ``aw``."""
    inner = ensure_future(aw)
    if inner.done():
        return inner
    outer = inner._loop.create_future()

    def inner_done(done: Future) -> None:
        if outer.done():
            return
        if done.cancelled():
            outer.cancel()
        elif (error := done.exception()) is not None:
            outer.set_exception(error)
        else:
            outer.set_result(done.result())

    def outer_done(_outer: Future) -> None:
        if not inner.done():
            inner.remove_done_callback(inner_done)

    inner.add_done_callback(inner_done)
    outer.add_done_callback(outer_done)
    return outer


async def to_thread(func: Callable[..., object], /, *args: object, **kwargs: object) -> object:
    """``func(*args, **kwargs)``, run on the loop: restricted mode has no worker threads."""
    return func(*args, **kwargs)


class TaskGroup(_Final):
    """``asyncio.TaskGroup``: ``async with`` waits for every task created in it; the first
    failure cancels the others and the failures are raised as an ``ExceptionGroup``."""

    __slots__ = ("_entered", "_errors", "_exiting", "_parent", "_tasks")

    def __init__(self) -> None:
        self._tasks: set[Task] = set()
        self._errors: list[BaseException] = []
        self._parent: Task | None = None
        self._entered = False
        self._exiting = False

    async def __aenter__(self) -> TaskGroup:
        if self._entered:
            raise RuntimeError("TaskGroup has already been entered")
        self._parent = current_task()
        if self._parent is None:
            raise RuntimeError("TaskGroup cannot determine the parent task")
        self._entered = True
        return self

    def create_task(self, coro: object, *, name: object = None, context: object = None) -> Task:
        if not self._entered:
            raise RuntimeError("TaskGroup has not been entered")
        if self._exiting and not self._tasks:
            raise RuntimeError("TaskGroup is finished")
        task = _require_loop(None).create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._on_task_done)
        return task

    def _on_task_done(self, task: Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return
        first = not self._errors
        self._errors.append(error)
        if first:
            for other in self._tasks:
                other.cancel()
            if self._parent is not None and not self._exiting:
                self._parent.cancel()

    async def __aexit__(self, kind: object, value: object, traceback: object) -> bool:
        self._exiting = True
        if isinstance(value, BaseException) and not isinstance(value, CancelledError):
            self._errors.append(value)
            for task in self._tasks:
                task.cancel()
        outside: CancelledError | None = None
        while self._tasks:
            pending = {task for task in self._tasks if not task.done()}
            try:
                if pending:
                    await wait(pending)
                else:
                    await _Yield()  # let the done callbacks of finished tasks run
            except CancelledError as cancelled:
                outside = cancelled
                for task in self._tasks:
                    task.cancel()
        errors = [e for e in self._errors if not isinstance(e, CancelledError)]
        if errors:
            if self._parent is not None:
                self._parent.uncancel()
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", errors)
        if outside is not None:
            raise outside
        return False


def asyncio_view(cell: Cell) -> dict[str, object]:
    """The attributes of one executor's ``asyncio`` view (its loops tick its budget)."""
    state = LoopState(cell)

    def new_event_loop() -> EventLoop:
        return EventLoop(state)

    def run(main: object, *, debug: bool | None = None) -> object:
        """Run the coroutine ``main`` on a new loop and close it; its result."""
        if running_loop() is not None:
            raise RuntimeError("asyncio.run() cannot be called from a running event loop")
        if type(main) is not types.CoroutineType:
            raise ValueError(f"a coroutine was expected, got {main!r}")
        loop = EventLoop(state)
        try:
            return loop.run_until_complete(main)  # a stop abandons the tasks there
        finally:
            try:
                loop._cancel_all()  # after a stop, nothing is left to cancel
            finally:
                loop.close()

    def get_running_loop() -> EventLoop:
        return _require_loop(None)

    def get_event_loop() -> EventLoop:
        loop = running_loop()
        if loop is not None:
            return loop
        ident = threading.get_ident()
        default = state.default.get(ident)
        if default is None or default.is_closed():
            default = state.default[ident] = EventLoop(state)
        return default

    def set_event_loop(loop: EventLoop | None) -> None:
        ident = threading.get_ident()
        if loop is None:
            state.default.pop(ident, None)
            return
        if type(loop) is not EventLoop:
            raise TypeError(f"loop must be an event loop of this asyncio view, not {loop!r}")
        state.default[ident] = loop

    def iscoroutine(value: object) -> bool:
        return type(value) is types.CoroutineType

    def iscoroutinefunction(func: object) -> bool:
        return inspect.iscoroutinefunction(func)

    return {
        "run": run,
        "sleep": sleep,
        "gather": gather,
        "create_task": create_task,
        "ensure_future": ensure_future,
        "current_task": current_task,
        "all_tasks": all_tasks,
        "wait_for": wait_for,
        "wait": wait,
        "as_completed": as_completed,
        "shield": shield,
        "timeout": timeout,
        "timeout_at": timeout_at,
        "Timeout": Timeout,
        "to_thread": to_thread,
        "TaskGroup": TaskGroup,
        "get_event_loop": get_event_loop,
        "get_running_loop": get_running_loop,
        "new_event_loop": new_event_loop,
        "set_event_loop": set_event_loop,
        "iscoroutine": iscoroutine,
        "iscoroutinefunction": iscoroutinefunction,
        "Future": Future,
        "Task": Task,
        "AbstractEventLoop": EventLoop,
        "Queue": Queue,
        "LifoQueue": LifoQueue,
        "PriorityQueue": PriorityQueue,
        "QueueEmpty": QueueEmpty,
        "QueueFull": QueueFull,
        "Lock": Lock,
        "Event": Event,
        "Condition": Condition,
        "Semaphore": Semaphore,
        "BoundedSemaphore": BoundedSemaphore,
        "TimeoutError": TimeoutError,
        "CancelledError": CancelledError,
        "InvalidStateError": InvalidStateError,
        "FIRST_COMPLETED": FIRST_COMPLETED,
        "FIRST_EXCEPTION": FIRST_EXCEPTION,
        "ALL_COMPLETED": ALL_COMPLETED,
    }
