"""Connection hygiene over real loopback sockets: idle, slow-head and slow-body connections are
cut off, one address cannot hold more than its share, and strangers' connections never keep an
authenticated client out.

Each client binds its own 127.0.0.x source address (all of 127/8 is loopback), so the
per-address cap sees distinct clients. Every wait is bounded by ``_BOUND_SECONDS``, far above
the timeouts configured, so a test that fails does so by the bound, never by a race.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import uvicorn
from service_support import ALICE, RunningServer, fake_server

from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.service.client import CLIENT_KEEPALIVE_SECONDS
from safeexec.service.config import ServiceConfig

_BOUND_SECONDS = 10.0


def _backend() -> FakeBackend:
    return FakeBackend(lambda _: FakeReply(stdout="ok\n"))


@contextlib.contextmanager
def _raw(server: RunningServer, source: str) -> Iterator[socket.socket]:
    sock = socket.create_connection(
        ("127.0.0.1", server.port), timeout=_BOUND_SECONDS, source_address=(source, 0)
    )
    try:
        yield sock
    finally:
        sock.close()


def _closed(sock: socket.socket, *, within: float = _BOUND_SECONDS) -> bool:
    """Whether the server closes ``sock`` (EOF or reset) within ``within`` seconds; what it
    sends before closing is read and dropped."""
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            return False
        try:
            if sock.recv(65536) == b"":
                return True
        except ConnectionError:
            return True
    return False


def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) for the server to have seen what the test did (accepts are async)."""
    deadline = time.monotonic() + _BOUND_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.01)


def _open(server: RunningServer) -> int:
    """The connections uvicorn holds open."""
    return len(server.server.server_state.connections)


def _request(sock: socket.socket, path: str, *, token: str | None = ALICE) -> bytes:
    """Send one GET on a kept-alive ``sock``; the response's status line."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n{auth}\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head.split(b"\r\n")[0]


def test_a_connection_that_sends_nothing_is_closed(tmp_path: Path) -> None:
    with fake_server(tmp_path, _backend(), head_timeout_seconds=0.3) as server:
        with _raw(server, "127.0.0.2") as idle:
            assert _closed(idle)
        assert server.guard.closed_by_rule["head_timeout"] == 1


def test_a_head_sent_one_byte_at_a_time_is_cut_off(tmp_path: Path) -> None:
    head = b"GET /v1/health HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"a" * 400
    with fake_server(tmp_path, _backend(), head_timeout_seconds=0.3) as server:
        with _raw(server, "127.0.0.2") as slow:
            cut = False
            for byte in head:  # 400 bytes at 50 ms each would take 20 s
                try:
                    slow.sendall(bytes([byte]))
                except ConnectionError:
                    cut = True
                    break
                if _closed(slow, within=0.05):
                    cut = True
                    break
        assert cut
        assert server.guard.closed_by_rule["head_timeout"] == 1


def test_a_body_sent_slowly_is_cut_off(tmp_path: Path) -> None:
    head = (
        f"PUT /v1/sessions/none/files/a HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {ALICE}\r\n"
        "Content-Length: 100000\r\n\r\n"
    ).encode()
    with fake_server(
        tmp_path, _backend(), head_timeout_seconds=30.0, body_timeout_seconds=0.3
    ) as server:
        with _raw(server, "127.0.0.2") as slow:
            slow.sendall(head)
            cut = False
            for _ in range(400):
                try:
                    slow.sendall(b"x")
                except ConnectionError:
                    cut = True
                    break
                if _closed(slow, within=0.05):
                    cut = True
                    break
        assert cut
        assert server.guard.closed_by_rule["body_timeout"] == 1


def test_one_address_holds_at_most_its_share(tmp_path: Path) -> None:
    with fake_server(
        tmp_path, _backend(), max_connections_per_address=3, head_timeout_seconds=30.0
    ) as server:
        with contextlib.ExitStack() as held:
            for _ in range(3):
                held.enter_context(_raw(server, "127.0.0.2"))
            _until(lambda: _open(server) == 3)
            with _raw(server, "127.0.0.2") as extra:
                assert _closed(extra)
            with _raw(server, "127.0.0.3") as other:
                assert _request(other, "/v1/health", token=None).startswith(b"HTTP/1.1 200")
        assert server.guard.closed_by_rule["per_address"] == 1


def test_strangers_idle_connections_make_room_for_an_authenticated_client(
    tmp_path: Path,
) -> None:
    with fake_server(tmp_path, _backend(), max_connections=6, head_timeout_seconds=30.0) as server:
        with contextlib.ExitStack() as held:
            known = [held.enter_context(_raw(server, "127.0.0.2")) for _ in range(2)]
            for sock in known:
                assert _request(sock, "/v1/sessions").startswith(b"HTTP/1.1 200")
            idle = [held.enter_context(_raw(server, f"127.0.0.{3 + i}")) for i in range(4)]
            _until(lambda: _open(server) == 6)
            # The server is full; a new client's connection pushes out the oldest stranger.
            with _raw(server, "127.0.0.9") as newcomer:
                assert _request(newcomer, "/v1/sessions").startswith(b"HTTP/1.1 200")
            assert _closed(idle[0])
            for sock in known:  # authenticated connections are never the ones closed
                assert _request(sock, "/v1/sessions").startswith(b"HTTP/1.1 200")
        assert server.guard.closed_by_rule["evicted"] == 1


def test_a_full_server_of_authenticated_connections_closes_the_newcomer(tmp_path: Path) -> None:
    with fake_server(tmp_path, _backend(), max_connections=2) as server:
        with _raw(server, "127.0.0.2") as first, _raw(server, "127.0.0.3") as second:
            for sock in (first, second):
                assert _request(sock, "/v1/sessions").startswith(b"HTTP/1.1 200")
            _until(lambda: _open(server) == 2)
            with _raw(server, "127.0.0.4") as newcomer:
                assert _closed(newcomer)
            assert _request(first, "/v1/sessions").startswith(b"HTTP/1.1 200")
        assert server.guard.closed_by_rule["full"] == 1


def test_an_idle_kept_alive_connection_is_closed(tmp_path: Path) -> None:
    with (
        fake_server(tmp_path, _backend(), keepalive_seconds=1.0) as server,
        _raw(server, "127.0.0.2") as sock,
    ):
        assert _request(sock, "/v1/health", token=None).startswith(b"HTTP/1.1 200")
        assert _closed(sock)


def test_the_server_keeps_a_connection_longer_than_clients_keep_it_idle() -> None:
    # A client that reuses a connection the server is closing loses the request it sent: the
    # server's keep-alive outlasts the idle expiry of httpx (and of our client, under uvicorn's).
    server = ServiceConfig(state_dir=Path("unused")).keepalive_seconds
    assert httpx.Limits().keepalive_expiry is not None
    assert server > httpx.Limits().keepalive_expiry
    assert min(server, uvicorn.Config(app=None).timeout_keep_alive) > CLIENT_KEEPALIVE_SECONDS
