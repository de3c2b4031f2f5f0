"""The restricted asyncio view's loop itself: stop signals end it, and it draws from the budget."""

from __future__ import annotations

import gc
import time
import types

import pytest

from safeexec.restricted import OperationBudget, RestrictedExecutor
from safeexec.restricted.cell_threads import _SLICE_SECONDS, ThreadState, ThreadStopped
from safeexec.restricted.views import WorkerViews
from safeexec.restricted.views.async_loop import EventLoop, Future, LoopState


def _executor(operations: int = 10_000) -> RestrictedExecutor:
    """An executor as during a run: its budget open (outside a run it is closed)."""
    executor = RestrictedExecutor(views=WorkerViews)
    executor.cell.budget = OperationBudget(operations)
    return executor


@pytest.mark.parametrize("signal", [ThreadStopped, SystemExit, KeyboardInterrupt])
def test_a_stop_signal_in_a_task_ends_the_loop_instead_of_becoming_its_exception(
    signal: type[BaseException],
) -> None:
    loop = EventLoop(LoopState(_executor().cell))

    async def stopped() -> None:
        raise signal("stop")

    async def main() -> str:
        loop.create_task(stopped())  # a task nobody awaits: its failure would go unseen
        await _next_turn(loop)
        await _next_turn(loop)
        return "finished"

    with pytest.raises(signal):
        loop.run_until_complete(main())


def test_an_ordinary_failure_is_the_tasks_exception() -> None:
    loop = EventLoop(LoopState(_executor().cell))

    async def failing() -> None:
        raise ValueError("x")

    async def main() -> str:
        task = loop.create_task(failing())
        await loop.create_task(_nothing())
        return repr(task.exception())

    assert loop.run_until_complete(main()) == "ValueError('x')"


async def _nothing() -> None:
    return None


def _next_turn(loop: EventLoop) -> Future:
    """A future the loop completes on its next turn: awaiting it lets the other tasks run (and,
    unlike a task, leaves no coroutine unstarted when a stop signal ends the loop first)."""
    future = loop.create_future()
    loop.call_soon(future.set_result, None)
    return future


def test_every_callback_draws_from_the_executors_budget() -> None:
    # Ten callbacks draw at least ten operations: a budget of nine runs out (and is enough
    # without them).
    assert EventLoop(LoopState(_executor(9).cell)).run_until_complete(_nothing()) is None
    loop = EventLoop(LoopState(_executor(9).cell))
    for _ in range(10):
        loop.call_soon(len, "x")
    idle = _nothing()
    with pytest.raises(RuntimeError, match="budget"):
        loop.run_until_complete(idle)
    idle.close()  # never started: the budget ran out first


def test_the_loop_stops_when_the_budget_runs_out() -> None:
    loop = EventLoop(LoopState(_executor(50).cell))

    async def forever() -> None:
        while True:
            await _nothing()
            await _Turn()

    with pytest.raises(RuntimeError, match="budget"):
        loop.run_until_complete(forever())


class _Turn:
    def __await__(self):  # type: ignore[no-untyped-def]
        yield None


def test_a_stopped_threads_tasks_are_closed_in_that_thread_not_left_to_the_collector() -> None:
    # The worker's executor (no ticks). ``waiter`` is suspended whenever the stop lands; left so,
    # the collector would resume it later in another cell, where ``asyncio.sleep`` raises (no
    # running loop) into its ``except BaseException`` forever.
    executor = RestrictedExecutor(views=WorkerViews, imports=("asyncio", "threading"))
    code = (
        "import asyncio, threading\n"
        "started = threading.Event()\n"
        "async def waiter():\n    while True:\n        try:\n"
        "            await asyncio.Event().wait()\n        except BaseException:\n"
        "            await asyncio.sleep(0)\n"
        "async def spinner():\n    started.set()\n    while True:\n        await asyncio.sleep(0)\n"
        "async def main():\n    await asyncio.gather(waiter(), spinner())\n"
        "threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()\n"
        "started.wait()\n"
    )
    executor.execute(code, filename="<stopped-thread-cell>")
    suspended = [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, types.CoroutineType)
        and obj.cr_code.co_filename == "<stopped-thread-cell>"
        and obj.cr_frame is not None
    ]
    assert suspended == []


def test_a_thread_unwinding_from_its_stop_is_not_stopped_again() -> None:
    # Stop rounds raise again every slice; under load that used to cut the loop's clean-up
    # after the first stop short, leaving coroutines for the collector. The clean-up here is
    # host code that outlasts several slices.
    executor = RestrictedExecutor(views=WorkerViews, imports=("threading",))
    threads = executor.cell.threads
    finished: list[str] = []

    def body() -> None:
        try:
            while True:
                time.sleep(0.001)
        except ThreadStopped:
            with threads.unwinding():
                deadline = time.monotonic() + 10 * _SLICE_SECONDS
                while time.monotonic() < deadline:
                    pass
                finished.append("clean-up")

    state = ThreadState(target=body, name="t", args=(), kwargs={}, daemon=True)
    threads.start(object(), state, body)
    threads.stop_all()
    assert state.finished.is_set()
    assert finished == ["clean-up"]
