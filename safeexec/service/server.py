"""Run the service under uvicorn until SIGINT/SIGTERM, then drain and close every session.

On a signal uvicorn stops accepting connections and waits up to ``config.drain_seconds`` for
requests in flight (runs finish and answer); the app's lifespan then interrupts what still
runs, closes every session (killing its processes) and closes the request log. The audit log
and the request log stay in the state dir for the next start; the sessions do not.
"""

from __future__ import annotations

import socket

import uvicorn

from safeexec.service.app import ServiceApp, create_app
from safeexec.service.auth import TokenStore
from safeexec.service.config import ServiceConfig

__all__ = ["DrainingServer", "serve"]


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


def serve(config: ServiceConfig, tokens: TokenStore, *, host: str, port: int) -> None:
    """Serve until stopped; ``ConfigurationError`` comes first if nobody could authenticate."""
    app = create_app(config, tokens)
    DrainingServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="info",
            lifespan="on",
            access_log=False,  # the request log (requests.jsonl) is the record, with token ids
            server_header=False,
            limit_concurrency=config.max_connections,
            timeout_graceful_shutdown=max(1, round(config.drain_seconds)),
        ),
        app=app,
    ).run()
