"""How long an MCP session over streamable HTTP may live, open event stream or not.

The SDK closes a session once no request of it has been in flight for its idle timeout, and an
open ``GET`` event stream is a request in flight: a client that opens one and goes quiet keeps
its session (and its sandbox) forever. :class:`SessionLifetimes` sits in front of the SDK's
app and ends a session, through the SDK's own ``DELETE``, when it has had no request other than
its stream for ``idle_seconds``, or when it is ``max_age_seconds`` old, whatever is open.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SessionLifetimes"]

_SESSION_HEADER = b"mcp-session-id"
_KEPT_HEADERS = frozenset({b"host", b"authorization", b"mcp-protocol-version"})


@dataclass(slots=True, kw_only=True, eq=False)
class _Tracked:
    opened: float
    last_active: float
    in_flight: int
    scope: Scope
    """The opening request's, for the ``DELETE`` that ends the session."""


class SessionLifetimes:
    """ASGI middleware over the SDK's streamable HTTP app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        idle_seconds: float,
        max_age_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._app = app
        self._idle = idle_seconds
        self._max_age = max_age_seconds
        self._clock = clock
        self._sessions: dict[str, _Tracked] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        session_id = _header(scope, _SESSION_HEADER)
        tracked = None if session_id is None else self._sessions.get(session_id)
        if session_id is None:
            await self._end_expired()
            await self._app(scope, receive, self._watching_for_new_session(scope, send))
        elif tracked is None:
            await self._app(scope, receive, send)  # unknown here: the SDK answers for it
        elif self._expired(tracked):
            await self._end(session_id, tracked)
            await self._app(scope, receive, send)  # now a 404 from the SDK
        elif scope["method"] == "GET":
            await self._stream(session_id, tracked, scope, receive, send)
        else:
            tracked.in_flight += 1
            try:
                await self._app(scope, receive, send)
            finally:
                tracked.in_flight -= 1
                tracked.last_active = self._clock()
                if scope["method"] == "DELETE":
                    self._sessions.pop(session_id, None)

    def _deadline(self, tracked: _Tracked) -> float:
        aged = tracked.opened + self._max_age
        return aged if tracked.in_flight else min(aged, tracked.last_active + self._idle)

    def _expired(self, tracked: _Tracked) -> bool:
        return self._clock() >= self._deadline(tracked)

    async def _stream(
        self, session_id: str, tracked: _Tracked, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Serve the event stream; it counts as no activity, and ends with its session."""

        async def watch() -> None:
            while not self._expired(tracked):
                await anyio.sleep(max(0.01, self._deadline(tracked) - self._clock()))
            await self._end(session_id, tracked)

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            try:
                await self._app(scope, receive, send)
            finally:
                group.cancel_scope.cancel()

    def _watching_for_new_session(self, scope: Scope, send: Send) -> Send:
        async def watching(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_HEADER:
                        now = self._clock()
                        self._sessions[value.decode("latin-1")] = _Tracked(
                            opened=now, last_active=now, in_flight=0, scope=scope
                        )
            await send(message)

        return watching

    async def _end_expired(self) -> None:
        for session_id, tracked in list(self._sessions.items()):
            if self._expired(tracked):
                await self._end(session_id, tracked)

    async def _end(self, session_id: str, tracked: _Tracked) -> None:
        """End the session through the SDK's own ``DELETE`` (its sandbox closes with it)."""
        if self._sessions.pop(session_id, None) is None:
            return
        headers = [(n, v) for n, v in tracked.scope["headers"] if n.lower() in _KEPT_HEADERS]
        scope = {
            **tracked.scope,
            "method": "DELETE",
            "headers": [*headers, (_SESSION_HEADER, session_id.encode("latin-1"))],
            "query_string": b"",
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(_: Message) -> None:
            return None

        with anyio.CancelScope(shield=True):
            await self._app(scope, receive, discard)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None
