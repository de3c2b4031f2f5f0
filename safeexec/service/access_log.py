"""The service's request log: one JSON line per HTTP request, in the state dir, append-only.

Each line names the token *id* that made the request (``null`` when it did not authenticate),
never the token; the route template, the session id from the path, the status and the time
until the answer started (the line is written just before the answer goes out). It sits beside
the sessions' ``audit.jsonl`` (whose events carry the same session ids) and, like it, is opened
``O_APPEND`` below the 0700 state dir without following links and written with one
``os.write`` per line, so a restart keeps every line written before it.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from safeexec.audit.statedir import open_private_dir
from safeexec.errors import AuditError

__all__ = ["CLIENT_CLOSED_REQUEST", "REQUEST_LOG", "RequestAudit", "RequestLog", "RequestRecord"]

REQUEST_LOG = "requests.jsonl"
CLIENT_CLOSED_REQUEST = 499
"""The status logged when no answer went out: the client left first (nginx's convention)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRecord:
    """One request as logged."""

    time: str
    request_id: str
    replica_id: str
    token_id: str | None
    method: str
    route: str
    session_id: str | None
    status: int
    duration_ms: float
    client: str | None


class RequestLog:
    """Appends :class:`RequestRecord` lines to ``<state_dir>/requests.jsonl``."""

    def __init__(self, state_dir: Path, *, fsync: bool = False) -> None:
        self.path = Path(state_dir) / REQUEST_LOG
        self._fsync = fsync
        self._lock = threading.Lock()
        dir_fd = open_private_dir(Path(state_dir))
        try:
            self._fd = os.open(
                REQUEST_LOG,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=dir_fd,
            )
        finally:
            os.close(dir_fd)

    def write(self, record: RequestRecord) -> None:
        """Append one line; ``AuditError`` if it cannot be written whole."""
        line = (json.dumps(asdict(record), sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            if self._fd < 0:
                raise AuditError(f"request log path={str(self.path)!r} is closed")
            written = os.write(self._fd, line)
            if written != len(line):
                raise AuditError(
                    f"short write to the request log path={str(self.path)!r} "
                    f"({written} of {len(line)} bytes)"
                )
            if self._fsync:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


class RequestAudit:
    """ASGI middleware that writes one :class:`RequestRecord` per HTTP request, as it answers.

    The authenticating dependency leaves the token id in ``scope["state"]["token_id"]``; the
    router leaves the matched route in ``scope["route"]``. A request that never authenticated
    is logged with ``token_id`` null, one that matched no route with its raw path's first part.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        log: RequestLog,
        replica_id: str,
        wall_clock: Callable[[], datetime],
        monotonic: Callable[[], float],
    ) -> None:
        self.app = app
        self.log = log
        self.replica_id = replica_id
        self.wall_clock = wall_clock
        self.monotonic = monotonic

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = self.monotonic()
        when = self.wall_clock()
        state = scope.setdefault("state", {})
        request_id = f"q-{uuid.uuid4().hex[:16]}"
        state["request_id"] = request_id
        written = False

        def record(status: int) -> None:
            nonlocal written
            written = True
            route = scope.get("route")
            template = getattr(route, "path", None)
            params = scope.get("path_params") or {}
            session_id = params.get("session_id")
            client = scope.get("client")
            self.log.write(
                RequestRecord(
                    time=when.isoformat(),
                    request_id=request_id,
                    replica_id=self.replica_id,
                    token_id=state.get("token_id"),
                    method=str(scope.get("method", "")),
                    route=template if isinstance(template, str) else "(unmatched)",
                    session_id=session_id if isinstance(session_id, str) else None,
                    status=status,
                    duration_ms=round((self.monotonic() - started) * 1000.0, 3),
                    client=f"{client[0]}:{client[1]}" if client else None,
                )
            )

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                # Written before the answer goes out: no answer leaves without its line (an
                # unwritable log fails the request instead).
                record(int(message["status"]))
                headers = list(message.get("headers", ()))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if not written:
                record(CLIENT_CLOSED_REQUEST)
