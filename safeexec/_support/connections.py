"""Connection hygiene beneath an HTTP app (the service's, the MCP server's): what a client may
hold open, and for how long, before it has proved it holds a token.

uvicorn's own knobs come first (``timeout_keep_alive`` closes an idle kept-alive connection,
``h11_max_incomplete_event_size`` caps a request head); what it lacks is added here, as its
HTTP/1.1 protocol with four more rules:

- **head timeout**: a request's line and headers must arrive within ``head_timeout_seconds`` of
  the connection opening (or of the first byte of a next request on a kept-alive one);
- **body timeout**: its body within ``body_timeout_seconds`` of the head;
- **per-address cap**: at most ``max_connections_per_address`` open connections per client
  address (a new one past it is closed at once);
- **unauthenticated go first**: past ``max_connections``, the oldest connection that has not
  yet sent a request with a known token is closed to make room; only when every connection is
  authenticated is the new one closed instead.

uvicorn's ``limit_concurrency`` is not used: it counts idle sockets too and answers everyone
503 while strangers hold them (the lockout this module exists to prevent). A connection that
breaks a rule is closed without an answer: it sent nothing an answer could be for.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from safeexec._support.bearer import TokenStore, bearer_token

__all__ = ["ConnectionGuard", "ConnectionLimits", "bearer_authenticates", "guarded_protocol"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionLimits:
    """The limits :class:`ConnectionGuard` enforces (see the module docstring)."""

    max_connections: int = 1000
    max_connections_per_address: int = 100
    head_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 60.0


Authenticates = Callable[[Iterable[tuple[bytes, bytes]]], bool]
"""Whether a request head (its lower-cased header pairs) carries a token the server knows."""


def bearer_authenticates(tokens: TokenStore[Any] | None) -> Authenticates:
    """A request head authenticates when its ``Authorization: Bearer`` token is one of
    ``tokens`` (``None``: a server without tokens, where no connection ever counts as known)."""

    def authenticates(headers: Iterable[tuple[bytes, bytes]]) -> bool:
        if tokens is None:
            return False
        for name, value in headers:
            if name == b"authorization":
                return tokens.authenticate(bearer_token(value.decode("latin-1"))) is not None
        return False

    return authenticates


class ConnectionGuard:
    """The open connections of one server, oldest first, and which have authenticated.

    Touched only from the event loop (uvicorn's protocol callbacks), so it needs no lock."""

    def __init__(self, limits: ConnectionLimits, *, authenticates: Authenticates) -> None:
        self.limits = limits
        self.authenticates = authenticates
        self._open: dict[_GuardedH11Protocol, None] = {}
        self._unauthenticated: dict[_GuardedH11Protocol, None] = {}
        self._per_address: Counter[str] = Counter()
        self.closed_by_rule: Counter[str] = Counter()
        """How many connections each rule closed (``head_timeout``, ``body_timeout``,
        ``per_address``, ``evicted``, ``full``), for tests and the benchmark."""

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def admit(self, connection: _GuardedH11Protocol) -> str | None:
        """Count a new connection; the rule that closes it at once, or ``None``."""
        address = connection.address
        if self._per_address[address] >= self.limits.max_connections_per_address:
            return "per_address"
        if len(self._open) >= self.limits.max_connections:
            victim = next(iter(self._unauthenticated), None)
            if victim is None:
                return "full"
            self.forget(victim)
            victim.close_for("evicted")
        self._open[connection] = None
        self._unauthenticated[connection] = None
        self._per_address[address] += 1
        return None

    def authenticated(self, connection: _GuardedH11Protocol) -> None:
        self._unauthenticated.pop(connection, None)

    def forget(self, connection: _GuardedH11Protocol) -> None:
        """Stop counting ``connection`` (it closed, or is being closed); idempotent."""
        if connection not in self._open:
            return
        del self._open[connection]
        self._unauthenticated.pop(connection, None)
        self._per_address[connection.address] -= 1
        if self._per_address[connection.address] <= 0:
            del self._per_address[connection.address]


class _GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under a :class:`ConnectionGuard` (set by
    :func:`guarded_protocol` on a subclass)."""

    guard: ConnectionGuard

    address: str = ""
    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _seen_cycle: object = None
    _authenticated: bool = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        refused = self.guard.admit(self)
        if refused is not None:
            self.guard.closed_by_rule[refused] += 1
            self.transport.close()
            return
        self._head_timer = self.loop.call_later(
            self.guard.limits.head_timeout_seconds, self.close_for, "head_timeout"
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        self.guard.forget(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._head_timer is None:
            # The first byte of a next request on a kept-alive connection: its head is timed.
            self._head_timer = self.loop.call_later(
                self.guard.limits.head_timeout_seconds, self.close_for, "head_timeout"
            )
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self.cycle is not self._seen_cycle:
            self._seen_cycle = self.cycle
            if not self._authenticated and self.guard.authenticates(self.headers):
                self._authenticated = True
                self.guard.authenticated(self)
        state = self.conn.their_state
        if state is not h11.IDLE and self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if state is h11.SEND_BODY:
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(
                    self.guard.limits.body_timeout_seconds, self.close_for, "body_timeout"
                )
        elif self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def close_for(self, rule: str) -> None:
        """Close this connection, counting ``rule`` as the reason."""
        self._cancel_timers()
        if not self.transport.is_closing():
            self.guard.closed_by_rule[rule] += 1
            self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None


def guarded_protocol(guard: ConnectionGuard) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol class (``uvicorn.Config(http=...)``) under ``guard``."""
    return type("GuardedH11Protocol", (_GuardedH11Protocol,), {"guard": guard})
