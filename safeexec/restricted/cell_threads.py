"""Threads that belong to their cell: the runtime's record of the threads sandboxed code started,
the sliced waits every view offers, and the stop at the end of a cell (see concurrency_views.py).

A thread still running when its cell is stopped gets :class:`ThreadStopped` raised in it (through
``PyThreadState_SetAsyncExc``, at its next bytecode), again and again until it ends, unless it
is unwinding (the runtime's own clean-up after the stop, which a second stop would cut short).
In the worker a thread that will not end keeps the cell from returning, and the host's grace
kill ends the process. In-process, a stopped cell waits a second for its threads and leaves any
left to their closed budget, which ends them at their next loop step or call (a single C
operation outlasts it, as in the cell's own thread).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from safeexec._support.tracebacks import format_exception
from safeexec.restricted.guards import GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

__all__ = [
    "MAX_LIVE_THREADS",
    "CellThreads",
    "ThreadState",
    "ThreadStopped",
    "report_error",
]

_SLICE_SECONDS = 0.02
# Live threads one executor may have (each is a real thread of the worker or of the host).
MAX_LIVE_THREADS = 64
# In-process, how long a stopped cell waits for its threads before leaving them to their budget
# (a closed budget ends them at their next loop step or call; only a C operation outlasts it).
_IN_PROCESS_STOP_SECONDS = 1.0


class ThreadStopped(BaseException):
    """Raised in a sandbox thread whose cell was stopped or ended (``except Exception`` misses
    it; a thread that catches it anyway gets it again)."""


class ThreadState(metaclass=RuntimeClass):
    """What the runtime knows of one sandbox thread (never reachable by the code)."""

    __slots__ = ("args", "daemon", "finished", "kwargs", "name", "real", "target")

    def __init__(
        self,
        *,
        target: object,
        name: str,
        args: tuple[object, ...],
        kwargs: dict[str, object],
        daemon: bool,
    ) -> None:
        self.target = target
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.daemon = daemon
        self.real: threading.Thread | None = None
        # Set as the thread's body returns. Never ``Thread.join``/``is_alive``: in CPython 3.11 an
        # interrupt landing in ``join`` marks the still-running thread stopped (gh-90882).
        self.finished = threading.Event()

    @property
    def alive(self) -> bool:
        return self.real is not None and not self.finished.is_set()


class CellThreads(metaclass=RuntimeClass):
    """The threads and pools the code started in one cell: waited for and stopped at the end
    of each cell (see the module docstring)."""

    def __init__(self, cell: Cell, *, on_stop: Callable[[], None]) -> None:
        self._cell = cell
        # Closes the budget the cell's code reads from its namespace (the executor's own).
        self._on_stop = on_stop
        self._lock = threading.Lock()
        self._live: dict[int, tuple[ThreadState, object]] = {}
        self._pools: list[Any] = []
        # Set while the cell's threads are being stopped (a plain flag: nothing waits on it).
        self._stopping = False
        self._unwinding: set[int] = set()
        self._count = 0

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    @property
    def stopping(self) -> bool:
        """The cell's threads are being stopped (what they raise now is the stop's own end)."""
        return self._stopping

    @contextlib.contextmanager
    def unwinding(self) -> Iterator[None]:
        """The calling thread runs the runtime's clean-up after its stop: stop rounds wait for
        it without raising again (sandboxed code the clean-up reaches starts with the stop
        check, so it cannot go on; in-process the wait is bounded, in the worker the host's
        grace kill bounds it)."""
        ident = threading.get_ident()
        with self._lock:
            self._unwinding.add(ident)
        try:
            yield
        finally:
            with self._lock:
                self._unwinding.discard(ident)

    # -- waiting -------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise if the cell is stopped: the budget's own error, or :class:`ThreadStopped`."""
        budget = self._cell.budget
        if budget.exhausted:
            next(budget.counter)  # raises as every budget tick does
        if self._stopping and threading.get_ident() in self._live:
            raise ThreadStopped("the cell ended; its threads are stopped")

    def wait(self, attempt: Callable[[float], bool], timeout: float | None) -> bool:
        """Call ``attempt(slice)`` until it succeeds (True) or ``timeout`` passes (False),
        checking between slices that the cell still runs."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        while True:
            self.check()
            left = _SLICE_SECONDS
            if deadline is not None:
                left = min(left, deadline - time.monotonic())
                if left <= 0:
                    return attempt(0)
            if attempt(left):
                return True

    # -- threads -------------------------------------------------------------------------------
    def next_name(self) -> str:
        with self._lock:
            self._count += 1
            return f"Thread-{self._count}"

    def start(self, handle: object, state: ThreadState, body: Callable[[], None]) -> None:
        with self._lock:
            self._prune()
            if len(self._live) >= MAX_LIVE_THREADS:
                raise RuntimeError(
                    f"can't start new thread: at most {MAX_LIVE_THREADS} threads run at once "
                    "in restricted mode"
                )

            def run() -> None:
                try:
                    body()
                finally:
                    state.finished.set()

            real = threading.Thread(target=run, name=f"sandbox-{state.name}", daemon=True)
            state.real = real
            real.start()
            assert real.ident is not None
            self._live[real.ident] = (state, handle)

    def current(self) -> object | None:
        """The sandbox thread object of the calling thread, or ``None`` (the cell's own)."""
        entry = self._live.get(threading.get_ident())
        return None if entry is None else entry[1]

    def alive(self) -> list[object]:
        with self._lock:
            self._prune()
            return [handle for _, handle in self._live.values()]

    def add_pool(self, pool: object) -> None:
        with self._lock:
            self._pools.append(pool)

    def idle(self) -> bool:
        """No thread, pool or stop is on record: the end of a cell and a stop have nothing to
        do (most cells start no thread; this keeps their fixed cost down).

        Read without the lock (each read is atomic under the GIL): the cell's own thread (or the
        host between cells) asks, so a ``start`` or ``add_pool`` racing this read runs in a
        sandbox thread, which is on record in ``_live`` by then (its own ``start`` records it
        under the lock that any ``start`` of its waits for) until its body has returned."""
        return not self._live and not self._pools and not self._stopping

    def _prune(self) -> None:
        for ident in [i for i, (state, _) in self._live.items() if not state.alive]:
            del self._live[ident]

    # -- the end of a cell ---------------------------------------------------------------------
    def end_of_cell(self) -> None:
        """The code ended normally: shut open pools down, wait for non-daemon threads (within
        the cell's limits), then stop what is left."""
        if self.idle():
            return
        try:
            self._wait_for_non_daemon_threads()  # a call: see ``_wait_for_non_daemon_threads``
        finally:
            self.stop_all()

    def _wait_for_non_daemon_threads(self) -> None:
        """Shut open pools down and wait for the non-daemon threads.

        Its own function, called inside ``end_of_cell``'s ``try``: CPython 3.13 checks for
        asynchronous exceptions and signals at a loop's back edge, which its exception table
        leaves outside the enclosing ``try``/``with`` (python/cpython#139622), so an interrupt
        landing there would skip the ``finally`` (the threads would never be stopped).
        ``tests/restricted/test_stop_paths.py`` holds every stop path to this."""
        with self._lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            pool.shutdown(wait=False)
        while True:
            with self._lock:
                self._prune()
                waiting = [state for state, _ in self._live.values() if not state.daemon]
            if not waiting:
                break
            for state in waiting:
                self.wait(state.finished.wait, None)

    def stop_all(self) -> None:
        """Stop every live sandbox thread: :class:`ThreadStopped` in each until it ends. In the
        worker this waits as long as it takes, through the host's interrupts too (a cell cannot
        return while a thread of it runs; the host's grace kill bounds the wait)."""
        if self.idle():
            return
        deadline = time.monotonic() + _IN_PROCESS_STOP_SECONDS
        interrupted = False
        while True:
            try:
                if self._stop_round(deadline):
                    break
            except KeyboardInterrupt:  # the host's interrupt (a second one may follow)
                interrupted = True
        if interrupted:
            raise KeyboardInterrupt

    def _stop_round(self, deadline: float) -> bool:
        """One round of stopping; ``True`` once no thread is left (or in-process, time is up)."""
        with self._lock:
            self._pools = []
            self._prune()
            live = list(self._live.items())
            unwinding = set(self._unwinding)
        if not live or (self._cell.counting and time.monotonic() > deadline):
            self._stopping = False
            return True
        if not self._stopping:
            # The cell is stopped: every loop step and call of its threads raises from now on
            # (their code reads the budget from the namespace), until the next cell begins.
            self._on_stop()
            self._stopping = True
        for ident, _entry in live:
            if ident not in unwinding:
                _raise_in_thread(ident)
        for _ident, (state, _) in live:
            state.finished.wait(_SLICE_SECONDS)
        return False


def _raise_in_thread(ident: int) -> None:
    """Raise :class:`ThreadStopped` in thread ``ident`` at its next bytecode."""
    try:
        import ctypes
    except ImportError:  # pragma: no cover - then waits and the host's kill bound the thread
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(ThreadStopped)
    )


def report_error(cell: Cell, name: str, error: BaseException) -> None:
    """What ``threading.excepthook`` prints, to the cell's output."""
    cell.sink.write(f"Exception in thread {name}:\n{format_exception(error)}")
