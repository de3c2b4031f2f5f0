"""Blocking ``Session`` calls off the event loop, and a run that notices its client leaving.

Every call into a ``Session`` (open, run, files, close) blocks: it waits on a sandbox. They run
in worker threads (:func:`in_thread`, bounded by one ``CapacityLimiter``) so the loop keeps
serving other requests. :func:`run_watching_client` also listens on the request's ASGI
``receive``: once the client disconnects it interrupts the cell, again and again until the step
ends (the first request may land before the cell starts), so no abandoned cell keeps a worker
busy; the step is recorded as usual and the session stays usable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread
from starlette.types import Receive

__all__ = ["ClientLeft", "StepInterrupted", "in_thread", "run_watching_client"]

_T = TypeVar("_T")
_INTERRUPT_POLL_SECONDS = 0.05


class StepInterrupted(Exception):
    """The step was interrupted from the host side (Session.run raised KeyboardInterrupt)."""


class ClientLeft(Exception):
    """The client disconnected before the step ended; the step was interrupted and recorded.

    ``value`` is what the step returned (``None`` if it raised)."""

    def __init__(self, value: object) -> None:
        super().__init__("the client disconnected; the cell was interrupted")
        self.value = value


async def in_thread(fn: Callable[[], _T], *, limiter: anyio.CapacityLimiter) -> _T:
    """``fn()`` in a worker thread; a ``KeyboardInterrupt`` there comes back ``StepInterrupted``.

    Cancelling the caller waits for ``fn`` to return (a thread cannot be stopped), so shutdown
    never leaves a session half-used.
    """

    def call() -> _T:
        try:
            return fn()
        except KeyboardInterrupt as exc:  # must not reach the event loop, which it would stop
            raise StepInterrupted(str(exc)) from None

    return await anyio.to_thread.run_sync(call, limiter=limiter)


async def run_watching_client(
    step: Callable[[], _T],
    *,
    receive: Receive,
    interrupt: Callable[[], None],
    limiter: anyio.CapacityLimiter,
) -> _T:
    """``step()`` in a thread; if the client disconnects first, interrupt it and raise
    ``ClientLeft`` once it has ended."""
    left = False
    finished = anyio.Event()

    async def watch() -> None:
        nonlocal left
        while (await receive())["type"] != "http.disconnect":
            pass
        left = True
        while not finished.is_set():
            interrupt()
            with anyio.move_on_after(_INTERRUPT_POLL_SECONDS):
                await finished.wait()

    failure: Exception | None = None
    values: list[_T] = []
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        # Caught here and raised after the group: raised inside, it would come out wrapped in
        # an ExceptionGroup.
        try:
            values.append(await in_thread(step, limiter=limiter))
        except Exception as exc:
            failure = exc
        finished.set()
        if not left:
            group.cancel_scope.cancel()
    if left:
        raise ClientLeft(values[0] if values else None)
    if failure is not None:
        raise failure
    return values[0]
