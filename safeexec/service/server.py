"""Run the service under uvicorn until SIGINT/SIGTERM, then drain and close every session.

On a signal uvicorn stops accepting connections and waits up to ``config.drain_seconds`` for
requests in flight (runs finish and answer); the app's lifespan then interrupts what still
runs, closes every session (killing its processes) and closes the request log. The audit log
and the request log stay in the state dir for the next start; the sessions do not.
"""

from __future__ import annotations

import socket

import uvicorn

from safeexec._support.connections import (
    ConnectionGuard,
    ConnectionLimits,
    bearer_authenticates,
    guarded_protocol,
)
from safeexec.service.app import ServiceApp, create_app
from safeexec.service.auth import TokenStore
from safeexec.service.config import ServiceConfig

__all__ = ["DrainingServer", "serve", "uvicorn_config"]


class DrainingServer(uvicorn.Server):
    """uvicorn's server, ending every event stream as shutdown begins.

    uvicorn waits for open connections before the app's lifespan ends, and an event stream
    never ends by itself: each gets a ``closed`` event first, so the drain waits only for runs.
    """

    def __init__(self, config: uvicorn.Config, *, app: ServiceApp) -> None:
        super().__init__(config)
        self._service = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._service.runtime.end_event_streams()
        await super().shutdown(sockets)


def uvicorn_config(
    app: ServiceApp, *, host: str, port: int, log_level: str = "info"
) -> tuple[uvicorn.Config, ConnectionGuard]:
    """uvicorn's settings for ``app`` (its connection limits from ``app``'s config), and the
    guard that enforces the limits uvicorn lacks (see :mod:`safeexec._support.connections`)."""
    config = app.runtime.config
    tokens = app.runtime.tokens
    guard = ConnectionGuard(
        ConnectionLimits(
            max_connections=config.max_connections,
            max_connections_per_address=config.max_connections_per_address,
            head_timeout_seconds=config.head_timeout_seconds,
            body_timeout_seconds=config.body_timeout_seconds,
        ),
        authenticates=bearer_authenticates(tokens),
    )
    return (
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            lifespan="on",
            access_log=False,  # the request log (requests.jsonl) is the record, with token ids
            server_header=False,
            http=guarded_protocol(guard),
            ws="none",
            timeout_keep_alive=max(1, round(config.keepalive_seconds)),
            h11_max_incomplete_event_size=config.max_head_bytes,
            timeout_graceful_shutdown=max(1, round(config.drain_seconds)),
        ),
        guard,
    )


def serve(config: ServiceConfig, tokens: TokenStore, *, host: str, port: int) -> None:
    """Serve until stopped; ``ConfigurationError`` comes first if nobody could authenticate."""
    app = create_app(config, tokens)
    settings, _ = uvicorn_config(app, host=host, port=port)
    DrainingServer(settings, app=app).run()
