"""The MCP server, driven by the official SDK's own client over stdio and streamable HTTP."""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import psutil
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from safeexec.audit.log import AuditLog

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CLI = "from safeexec.cli.app import main; main()"


def _server_args(state_dir: Path, *extra: str) -> list[str]:
    return ["-c", CLI, "mcp", "--state-dir", str(state_dir), *extra]


@asynccontextmanager
async def _stdio_client(state_dir: Path, *extra: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=_server_args(state_dir, *extra))
    async with Client(params) as client:
        yield client


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_a_stdio_client_runs_code_keeps_state_gets_a_figure_and_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def scenario() -> None:
        async with _stdio_client(state) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {
                "run_code",
                "check_code",
                "list_files",
                "read_file",
                "write_file",
                "reset_session",
            }
            first = await client.call_tool("run_code", {"code": "total = 40 + 2"})
            assert not first.is_error
            second = await client.call_tool("run_code", {"code": "print(total)"})
            assert "42" in _text(second) and not second.is_error
            figure = await client.call_tool(
                "run_code",
                {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])"},
            )
            images = [c for c in figure.content if isinstance(c, types.ImageContent)]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            assert base64.b64decode(images[0].data).startswith(PNG_MAGIC)
            refused = await client.call_tool("run_code", {"code": "import ctypes"})
            assert refused.is_error
            assert "SX202" in _text(refused)
            assert refused.structured_content is not None
            assert refused.structured_content["verdict"] == "deny"
            assert "SX202" in refused.structured_content["rules"]

    anyio.run(scenario)
    events = list(AuditLog(state / "audit.jsonl").read())
    assert [e.verdict.value for e in events] == ["allow", "allow", "allow", "deny"]
    assert len({e.session_id for e in events}) == 1  # one session for the client


def test_files_check_and_reset_work_in_the_client_sessions_workdir(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _stdio_client(tmp_path / "state") as client:
            wrote = await client.call_tool(
                "write_file", {"path": "data/in.csv", "content": "a,b\n1,2\n"}
            )
            assert not wrote.is_error
            ran = await client.call_tool(
                "run_code",
                {
                    "code": "rows = open('data/in.csv').read().split()\n"
                    "open('out.txt', 'w').write(rows[1])\nrows"
                },
            )
            assert "['a,b', '1,2']" in _text(ran)
            resources = [c for c in ran.content if isinstance(c, types.EmbeddedResource)]
            assert [str(r.resource.uri) for r in resources] == ["safeexec://workdir/out.txt"]
            listed = await client.call_tool("list_files", {})
            assert "out.txt" in _text(listed) and "data/" in _text(listed)
            read = await client.call_tool("read_file", {"path": "out.txt"})
            (content,) = read.content
            assert isinstance(content, types.EmbeddedResource)
            assert isinstance(content.resource, types.TextResourceContents)
            assert content.resource.text == "1,2"
            escape = await client.call_tool("read_file", {"path": "../../etc/passwd"})
            assert escape.is_error
            checked = await client.call_tool("check_code", {"code": "import subprocess"})
            assert checked.is_error and "SX201" in _text(checked)
            fine = await client.call_tool("check_code", {"code": "print(1)"})
            assert not fine.is_error and "verdict: allow" in _text(fine)
            await client.call_tool("reset_session", {})
            gone = await client.call_tool("run_code", {"code": "rows"})
            assert gone.is_error and "NameError" in _text(gone)
            assert "out.txt" not in _text(await client.call_tool("list_files", {}))
            bad = await client.call_tool("run_code", {"code": 1})
            assert bad.is_error

    anyio.run(scenario)


def test_output_streams_to_the_client_as_progress_while_the_cell_runs(tmp_path: Path) -> None:
    seen: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async def scenario() -> str:
        async with _stdio_client(tmp_path / "state") as client:
            code = (
                "import time\n"
                "for i in range(3):\n"
                "    print('tick', i, flush=True)\n"
                "    time.sleep(0.2)"
            )
            result = await client.call_tool("run_code", {"code": code}, progress_callback=progress)
            return _text(result)

    text = anyio.run(scenario)
    assert "tick 2" in text
    streamed = "".join(m.removeprefix("stdout: ") for m in seen if m.startswith("stdout: "))
    assert streamed == "tick 0\ntick 1\ntick 2\n"


def test_a_calls_mode_runs_in_that_backend_of_the_clients_one_session(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def scenario() -> None:
        async with _stdio_client(state, "--mode", "native") as client:
            await client.call_tool("run_code", {"code": "n = 1"})
            other = await client.call_tool("run_code", {"code": "n = 2", "mode": "restricted"})
            assert not other.is_error
            back = await client.call_tool("run_code", {"code": "n"})
            assert "1" in _text(back)  # each mode keeps its own interpreter
            unknown = await client.call_tool("run_code", {"code": "1", "mode": "fake"})
            assert unknown.is_error and "mode" in _text(unknown)

    anyio.run(scenario)
    events = list(AuditLog(state / "audit.jsonl").read())
    assert [e.backend for e in events] == ["native", "restricted", "native"]
    assert len({e.session_id for e in events}) == 1  # one session: one budget, one log id
    assert events[-1].budget is not None
    assert events[-1].budget.steps_left == events[0].budget.steps_left - 2  # type: ignore[union-attr]


def test_a_write_over_the_policys_file_size_is_refused(tmp_path: Path) -> None:
    policy = tmp_path / "small.toml"
    policy.write_text('extends = "default"\n\n[limits]\nfile_size_bytes = 1024\n')

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with _stdio_client(tmp_path / "state", "--policy", str(policy)) as client:
            big = base64.b64encode(b"x" * 1025).decode()
            small = base64.b64encode(b"x" * 1024).decode()
            refused = await client.call_tool(
                "write_file", {"path": "big.bin", "content": big, "encoding": "base64"}
            )
            kept = await client.call_tool(
                "write_file", {"path": "ok.bin", "content": small, "encoding": "base64"}
            )
            return refused, kept

    refused, kept = anyio.run(scenario)
    assert refused.is_error and "file size" in _text(refused)
    assert not kept.is_error


# -- streamable HTTP ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


TOKEN = "mcp-test-token-0123456789abcdef"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpServer:
    url: str
    pid: int

    def sandboxes(self) -> int:
        """How many processes the server runs beneath it (sandbox templates and workers)."""
        return len(psutil.Process(self.pid).children(recursive=True))

    def client(
        self, token: str | None = TOKEN, *, statuses: list[int] | None = None, **options: Any
    ) -> Client:
        """The SDK's client over the SDK's own HTTP client, sending ``token`` as a bearer
        (``statuses`` collects the HTTP status of every response it gets)."""
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}

        async def record(response: httpx2.Response) -> None:
            if statuses is not None:
                statuses.append(response.status_code)

        http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [record]})
        return Client(streamable_http_client(self.url, http_client=http), **options)


@contextmanager
def _serving(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[HttpServer]:
    port = _free_port()
    args = _server_args(tmp_path / "state", "--transport", "http", "--port", str(port), *extra)
    process = subprocess.Popen(
        [sys.executable, *args], stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
    )
    try:
        for _ in range(300):  # up to ~30 s for the interpreter and uvicorn to start
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode() if process.stderr else "")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            raise AssertionError("the HTTP server did not start listening")
        yield HttpServer(url=f"http://127.0.0.1:{port}/mcp", pid=process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    with _serving(tmp_path, env={"SAFEEXEC_MCP_TOKENS": f"alice={TOKEN}"}) as server:
        yield server


def test_http_clients_each_get_their_own_session_closed_when_they_go(
    http_server: HttpServer,
) -> None:
    async def scenario() -> None:
        baseline = await _warm_baseline(http_server)
        async with http_server.client() as alice, http_server.client() as bob:
            await alice.call_tool("run_code", {"code": "secret = 'alice'"})
            await bob.call_tool("run_code", {"code": "secret = 'bob'"})
            assert "alice" in _text(await alice.call_tool("run_code", {"code": "secret"}))
            assert "bob" in _text(await bob.call_tool("run_code", {"code": "secret"}))
            assert http_server.sandboxes() >= 2
        # The clients sent DELETE on exit; their sandboxes go with their sessions, and only
        # the shared template with its warm spares stays beneath the server.
        assert await _settles_to(http_server, baseline)

    anyio.run(scenario)


async def _warm_baseline(server: HttpServer) -> int:
    """The processes beneath the server once one session came and went: the shared template
    and the sessions it keeps forked ahead (waited for until the count is steady)."""
    async with server.client() as warm:
        await warm.call_tool("run_code", {"code": "pass"})
    counts = []
    for _ in range(100):
        counts.append(server.sandboxes())
        if len(counts) >= 10 and len(set(counts[-10:])) == 1:
            break
        await anyio.sleep(0.1)
    return counts[-1]


async def _settles_to(server: HttpServer, baseline: int) -> bool:
    for _ in range(100):
        if server.sandboxes() <= baseline:
            return True
        await anyio.sleep(0.1)
    return False


def test_an_http_client_pinning_the_stateless_protocol_gets_a_fresh_session_per_call(
    http_server: HttpServer,
) -> None:
    async def scenario() -> None:
        baseline = await _warm_baseline(http_server)
        async with http_server.client(mode="2026-07-28") as client:
            await client.call_tool("run_code", {"code": "x = 1"})
            again = await client.call_tool("run_code", {"code": "x"})
            assert again.is_error and "NameError" in _text(again)
        assert await _settles_to(http_server, baseline)  # each request's session closed

    anyio.run(scenario)


def test_http_requests_with_a_foreign_host_header_are_refused(http_server: HttpServer) -> None:
    response = httpx.post(
        http_server.url,
        headers={
            "Host": "attacker.example",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    assert response.status_code in (400, 403, 421)


_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
_ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token-0123456789", f"Basic {TOKEN}"])
def test_http_requests_without_a_known_bearer_token_are_401(
    http_server: HttpServer, authorization: str | None
) -> None:
    async def scenario() -> None:
        headers = (
            dict(_ACCEPT) if authorization is None else {**_ACCEPT, "Authorization": authorization}
        )
        async with httpx2.AsyncClient() as http:  # the MCP SDK's own HTTP client
            response = await http.post(http_server.url, headers=headers, json=_PING)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"] == "unauthorized"

    anyio.run(scenario)
    assert http_server.sandboxes() == 0  # nothing was opened for it


def test_the_sdk_client_without_a_token_cannot_connect_and_opens_no_sandbox(
    http_server: HttpServer,
) -> None:
    async def scenario() -> None:
        statuses: list[int] = []
        with pytest.raises(Exception):  # noqa: B017 (the SDK wraps the failure its own ways)
            async with http_server.client(token=None, statuses=statuses) as client:
                await client.call_tool("run_code", {"code": "print(1)"})
        assert statuses and set(statuses) == {401}  # every request it sent was refused

    anyio.run(scenario)
    assert http_server.sandboxes() == 0


def test_no_auth_serves_without_a_token(tmp_path: Path) -> None:
    async def scenario(server: HttpServer) -> None:
        async with server.client(token=None) as client:
            result = await client.call_tool("run_code", {"code": "print(6 * 7)"})
            assert "42" in _text(result)

    with _serving(tmp_path, "--no-auth") as server:
        anyio.run(scenario, server)


def test_http_without_tokens_or_no_auth_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SAFEEXEC_MCP_TOKENS"}
    done = subprocess.run(
        [sys.executable, *_server_args(tmp_path, "--transport", "http", "--port", "9")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert "no tokens" in done.stderr and "--no-auth" in done.stderr
