"""MCP sessions over streamable HTTP belong to the token that opened them, and an open event
stream does not keep a session alive past its idle limit or its maximum age.

A real uvicorn server on a loopback port, in a thread, serving :func:`http_app`; the test
speaks plain HTTP to it. Every wait is bounded by ``_BOUND_SECONDS``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import uvicorn

from safeexec._support.bearer import TokenStore, TokenTable, hash_token
from safeexec.faces.mcp_server import McpConfig, http_app
from safeexec.policy.loader import load_policy

_BOUND_SECONDS = 30.0
ALICE = "alice-mcp-token-0123456789abcdef"
BOB = "bob-mcp-token-0123456789abcdef"
_VERSION = "2025-06-18"
_ACCEPT = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": _VERSION}


@contextlib.contextmanager
def _serving(tmp_path: Path, **limits: float) -> Iterator[str]:
    tokens = TokenStore(
        [
            TokenTable(token_id="alice", sha256=hash_token(ALICE)),
            TokenTable(token_id="bob", sha256=hash_token(BOB)),
        ]
    )
    config = McpConfig(policy=load_policy("default"), state_dir=tmp_path / "state")
    app = http_app(config, tokens=tokens, **limits)  # type: ignore[arg-type]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    _eventually(lambda: server.started, "the server started")
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=_BOUND_SECONDS)
        sock.close()


def _eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _BOUND_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {_BOUND_SECONDS}s: {what}")
        time.sleep(0.05)


def _headers(token: str, session_id: str | None = None) -> dict[str, str]:
    sent = {**_ACCEPT, "Authorization": f"Bearer {token}"}
    return sent if session_id is None else {**sent, "Mcp-Session-Id": session_id}


def _open_session(url: str, token: str) -> str:
    """Initialize a session as ``token``; its id."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": _VERSION,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    opened = httpx.post(url, headers=_headers(token), json=hello, timeout=_BOUND_SECONDS)
    assert opened.status_code == 200, opened.text
    session_id = opened.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ready = httpx.post(url, headers=_headers(token, session_id), json=done, timeout=10)
    assert ready.status_code == 202, ready.text
    return session_id


def _ping(url: str, token: str, session_id: str) -> int:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return httpx.post(
        url, headers=_headers(token, session_id), json=ping, timeout=_BOUND_SECONDS
    ).status_code


def test_a_session_id_is_a_404_for_any_other_token(tmp_path: Path) -> None:
    with _serving(tmp_path) as url:
        session_id = _open_session(url, ALICE)
        assert _ping(url, BOB, session_id) == 404
        assert _ping(url, ALICE, session_id) == 200


def test_an_open_event_stream_does_not_keep_an_idle_session_open(tmp_path: Path) -> None:
    with _serving(tmp_path, idle_timeout_seconds=0.5) as url:
        session_id = _open_session(url, ALICE)
        with httpx.stream(
            "GET", url, headers=_headers(ALICE, session_id), timeout=_BOUND_SECONDS
        ) as stream:
            assert stream.status_code == 200
            deadline = time.monotonic() + _BOUND_SECONDS
            for _ in stream.iter_bytes():  # ends when the server ends the stream
                assert time.monotonic() < deadline, "the stream kept its idle session open"
        assert _ping(url, ALICE, session_id) == 404


def test_a_busy_session_ends_at_its_maximum_age(tmp_path: Path) -> None:
    with _serving(tmp_path, idle_timeout_seconds=3600.0, max_age_seconds=1.0) as url:
        session_id = _open_session(url, ALICE)
        _eventually(lambda: _ping(url, ALICE, session_id) == 404, "the session aged out")


def test_the_http_server_closes_a_connection_that_sends_nothing(tmp_path: Path) -> None:
    """``safeexec mcp --transport http`` serves under the connection guard: a socket that never
    sends a request head is closed at the head timeout (10 s by default)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-c",
        "from safeexec.cli.app import main; main()",
        "mcp",
        "--state-dir",
        str(tmp_path / "state"),
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    env = {**os.environ, "SAFEEXEC_MCP_TOKENS": f"alice={ALICE}"}
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        _eventually(lambda: _listening(port), "the MCP server listens")
        with socket.create_connection(("127.0.0.1", port), timeout=_BOUND_SECONDS) as idle:
            assert idle.recv(1) == b""  # closed by the server (a timeout raises instead)
    finally:
        process.terminate()
        process.wait(timeout=_BOUND_SECONDS)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
