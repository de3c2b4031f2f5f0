"""What the server reads of a request body: nothing from a client it does not know, and never
more than ``max_body_bytes`` (a 413).

A request ``admits`` refuses (no token, or an unknown one) reaches the app with an empty body,
unread: the app answers it (401) and the connection closes, so a stranger's upload is never
buffered. A declared ``Content-Length`` over the limit is refused before the app sees the
request; a chunked body is counted as it arrives. Either way the body is read to its end (up to
``drain_bytes``, then the connection is closed) so that the client, still writing, gets the 413
rather than a reset connection. Bodies within the limit are buffered and replayed to the app,
after which ``receive`` is the server's again, so the app still hears a disconnect.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit"]


class BodyLimit:
    """ASGI middleware reading HTTP request bodies only for requests ``admits`` lets in, and
    enforcing ``max_body_bytes`` on those."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        admits: Callable[[Scope], bool],
        drain_bytes: int = 64 << 20,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.admits = admits
        self.drain_bytes = max(drain_bytes, max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.admits(scope):
            await self.app(scope, _unread, _closing(send))
            return
        declared = _content_length(scope)  # None: undeclared (or unreadable), counted instead
        if declared is not None and declared > self.max_body_bytes:
            await self._drain(receive, already=0)
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            more = bool(message.get("more_body", False))
            if size > self.max_body_bytes:
                if more:
                    await self._drain(receive, already=size)
                await self._too_large(send)
                return
            chunks.append(chunk)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _drain(self, receive: Receive, *, already: int) -> None:
        seen = already
        while seen <= self.drain_bytes:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            seen += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def _too_large(self, send: Send) -> None:
        message = (
            f"the request body is over the limit max_body_bytes={self.max_body_bytes}; "
            "send less (large files: split them)"
        )
        body = json.dumps({"error": "request_too_large", "message": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _unread() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def _closing(send: Send) -> Send:
    """``send``, with ``Connection: close`` on the response: the body left unread is not
    taken for the next request."""

    async def closing(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", ()) if h[0].lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return closing


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None
