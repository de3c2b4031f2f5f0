"""Helpers for the service tests: a real uvicorn server on a free loopback port, in a thread.

The test reaches the server only over HTTP on 127.0.0.1, like any client; it also holds the
app object, so it can look at the runtime (e.g. which worker pids a session has) from outside.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn

from safeexec._support.connections import ConnectionGuard
from safeexec.backends.base import Backend
from safeexec.service.app import ServiceApp, create_app
from safeexec.service.auth import TokenEntry, TokenStore, hash_token
from safeexec.service.config import ServiceConfig
from safeexec.service.quotas import Quota
from safeexec.service.server import DrainingServer, uvicorn_config

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
_START_SECONDS = 30.0


def token_store(quota: Quota | None = None, **quotas: Quota) -> TokenStore:
    """Alice and Bob, with ``quota`` each unless ``quotas`` names one for them."""
    base = quota or Quota()
    return TokenStore(
        [
            TokenEntry(token_id="alice", sha256=hash_token(ALICE), quota=quotas.get("alice", base)),
            TokenEntry(token_id="bob", sha256=hash_token(BOB), quota=quotas.get("bob", base)),
        ]
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class RunningServer:
    app: ServiceApp
    base_url: str
    state_dir: Path
    server: uvicorn.Server
    guard: ConnectionGuard
    port: int

    def client(
        self, token: str | None = ALICE, *, headers: Mapping[str, str] | None = None
    ) -> httpx.Client:
        """An HTTP client of this server sending ``token`` (None: no Authorization header)."""
        sent = {**(bearer(token) if token is not None else {}), **(headers or {})}
        return httpx.Client(base_url=self.base_url, headers=sent, timeout=60.0)


@contextlib.contextmanager
def serve(
    state_dir: Path,
    *,
    tokens: TokenStore | None = None,
    backends: Mapping[str, Backend] | None = None,
    **config: object,
) -> Iterator[RunningServer]:
    """Serve a fresh app on 127.0.0.1:<free port> until the block ends (then shut it down)."""
    app = create_app(
        ServiceConfig(state_dir=state_dir, **config),  # type: ignore[arg-type]
        tokens or token_store(),
        backends=backends,
    )
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # every response waits ~40 ms for a delayed ACK (uvicorn's own --host/--port bind says so).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings, guard = uvicorn_config(app, host="127.0.0.1", port=port, log_level="warning")
    server = DrainingServer(settings, app=app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield RunningServer(
            app=app,
            base_url=f"http://127.0.0.1:{port}",
            state_dir=state_dir,
            server=server,
            guard=guard,
            port=port,
        )
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


def fake_pack(directory: Path) -> str:
    """A pack file: the default pack on the fake backend (the handler answers every run)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "fake-pack.toml"
    path.write_text(
        'extends = "default"\n\n[policy]\nid = "fake-pack"\n\n'
        '[backends]\nallowed = ["fake"]\ndefault = "fake"\n',
        encoding="utf-8",
    )
    return str(path)


def fake_server(
    tmp_path: Path, backend: Backend, **config: object
) -> contextlib.AbstractContextManager[RunningServer]:
    """A server whose only mode is the fake ``backend`` (its handler answers every run)."""
    return serve(
        tmp_path / "state",
        backends={"fake": backend},
        policies=(fake_pack(tmp_path / "packs"),),
        modes=("fake",),
        **config,
    )
