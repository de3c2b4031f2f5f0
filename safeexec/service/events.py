"""A session's live events for ``GET /v1/sessions/{id}/events`` (server-sent events).

While a cell runs, ``Session.run(on_output=...)`` hands its stdout/stderr chunks to the worker
thread's callback; :meth:`EventHub.publisher` turns that into a thread-safe hand-off onto the
event loop, where every subscriber's bounded queue receives the event. A subscriber that falls
``max_queued`` events behind is dropped (it gets a ``lagged`` event and its stream ends) rather
than letting memory grow; the step's outcome always holds the full, capped output.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

from safeexec.model.values import OutputChunk

__all__ = ["FINAL_EVENTS", "EventHub", "ServerEvent", "Subscription"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerEvent:
    """One SSE event: its name (``output``, ``step``, ``lagged``, ``closed``) and JSON data."""

    name: str
    data: Mapping[str, object]

    def encode(self) -> bytes:
        body = json.dumps(self.data, sort_keys=True, separators=(",", ":"))
        return f"event: {self.name}\ndata: {body}\n\n".encode()


FINAL_EVENTS = frozenset({"closed", "lagged"})
"""After one of these, a subscriber's stream ends."""


class EventHub:
    """Fan-out of one session's events to its subscribers (loop thread only, but
    :meth:`publisher` callbacks may be called from any thread)."""

    def __init__(self, *, max_queued: int = 1024) -> None:
        self._queues: set[asyncio.Queue[ServerEvent]] = set()
        self._max_queued = max_queued
        self._closed: ServerEvent | None = None

    def __len__(self) -> int:
        return len(self._queues)

    def publish(self, event: ServerEvent) -> None:
        for queue in tuple(self._queues):
            if queue.qsize() >= self._max_queued - 1:
                # One slot is kept for this notice, so a lagging subscriber always learns why.
                self._queues.discard(queue)
                queue.put_nowait(ServerEvent(name="lagged", data={"dropped_after": queue.qsize()}))
            else:
                queue.put_nowait(event)

    def publisher(self, run_id: str) -> Callable[[OutputChunk], None]:
        """An ``on_output`` callback (for the worker thread) publishing each chunk as an
        ``output`` event tagged with ``run_id`` (the run request's id, as in the request log)."""
        loop = asyncio.get_running_loop()

        def deliver(chunk: OutputChunk) -> None:
            event = ServerEvent(
                name="output",
                data={"stream": chunk.stream.value, "text": chunk.text, "run_id": run_id},
            )
            loop.call_soon_threadsafe(self.publish, event)

        return deliver

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        """Events from now on, until the hub closes (a ``closed`` event) or this lags."""
        queue: asyncio.Queue[ServerEvent] = asyncio.Queue(self._max_queued)
        if self._closed is not None:
            queue.put_nowait(self._closed)
        else:
            self._queues.add(queue)
        try:
            yield Subscription(queue)
        finally:
            self._queues.discard(queue)

    def close(self, reason: str = "the session was closed") -> None:
        """End every subscriber's stream (and any later one's) with a ``closed`` event."""
        self._closed = ServerEvent(name="closed", data={"reason": reason})
        for queue in tuple(self._queues):
            queue.put_nowait(self._closed)
        self._queues.clear()


class Subscription:
    """One subscriber's queue of events."""

    def __init__(self, queue: asyncio.Queue[ServerEvent]) -> None:
        self._queue = queue

    async def next(self, *, timeout: float) -> ServerEvent | None:
        """The next event, or ``None`` if none came within ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None
